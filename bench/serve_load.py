"""Load on the environment server: sessions/s, steps/s and memory per session, 1 vs N processes.

``bootcamp serve --workers N`` in-process equivalent (:class:`WorkerPool`) on a free port;
C concurrent clients, each with its own keep-alive connection (as separate trainers
would), loop for ``--seconds``: open an ``escape_room`` easy episode, step it ``--steps``
times with a native ``look`` call (the tool runs: a real step), close it. A session is one
open-step-close cycle. Memory per session: the growth of the worker processes' RSS with
``--hold`` episodes open (measured first, on fresh processes), divided by that number.

The load generator runs in this process, on the same 2 cores as the server, so it takes
CPU the server could use; its CPU share is printed.

    python bench/serve_load.py [--clients 256 1024] [--workers 1 2] [--seconds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time
from typing import Any

import aiohttp
import orjson
import psutil

from agentharness.serve.workers import WorkerPool

LOOK = orjson.dumps(
    {
        "turn": {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
            ],
        }
    }
)
HEADERS = {"Content-Type": "application/json"}


async def client(base: str, seed: int, steps: int, deadline: float, counts: dict[str, int]) -> None:
    # One connection per client: its requests stay on one server process.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) as http:
        while time.perf_counter() < deadline:
            body = orjson.dumps({"task": "escape_room", "difficulty": "easy", "seed": seed})
            async with http.post(f"{base}/episodes", data=body, headers=HEADERS) as r:
                if r.status == 429:
                    counts["busy"] += 1
                    await asyncio.sleep(0.05)
                    continue
                eid = orjson.loads(await r.read())["episode_id"]
            for _ in range(steps):
                async with http.post(
                    f"{base}/episodes/{eid}/step", data=LOOK, headers=HEADERS
                ) as r:
                    done = orjson.loads(await r.read())["done"]
                counts["steps"] += 1
                if done:
                    break
            async with http.delete(f"{base}/episodes/{eid}") as r:
                await r.read()
            counts["sessions"] += 1
            seed += 7919


def server_cpu(pids: list[int]) -> float:
    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids)


async def load(
    base: str, clients: int, steps: int, seconds: float, pids: list[int]
) -> dict[str, float]:
    counts = {"sessions": 0, "steps": 0, "busy": 0}
    c0, s0, t0 = time.process_time(), server_cpu(pids), time.perf_counter()
    deadline = t0 + seconds
    await asyncio.gather(*(client(base, i, steps, deadline, counts) for i in range(clients)))
    wall = time.perf_counter() - t0
    server = server_cpu(pids) - s0
    requests = counts["steps"] + 2 * counts["sessions"]  # open + steps + close
    return {
        "sessions/s": counts["sessions"] / wall,
        "steps/s": counts["steps"] / wall,
        "busy": counts["busy"],
        "client CPU share": (time.process_time() - c0) / wall,
        "server CPU share": server / wall,
        "server ms/request": server / max(1, requests) * 1e3,
    }


def rss(pool: WorkerPool) -> int:
    return sum(psutil.Process(p.pid).memory_info().rss for p in pool.processes)


async def hold(base: str, n: int, seed: int = 0) -> list[str]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as http:

        async def one(i: int) -> str:
            body = orjson.dumps({"task": "escape_room", "difficulty": "easy", "seed": seed + i})
            async with http.post(f"{base}/episodes", data=body, headers=HEADERS) as r:
                return str(orjson.loads(await r.read())["episode_id"])

        return list(await asyncio.gather(*(one(i) for i in range(n))))


async def close_all(base: str, ids: list[str]) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as http:

        async def one(eid: str) -> None:
            async with http.delete(f"{base}/episodes/{eid}") as r:
                await r.read()

        await asyncio.gather(*(one(e) for e in ids))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--hold", type=int, default=1000)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 16384)), hard))

    rows: list[dict[str, Any]] = []
    for workers in args.workers:
        with WorkerPool(
            "127.0.0.1",
            0,
            workers,
            max_sessions=4 * max([*args.clients, args.hold]),
            ttl_s=600,
            log_level="error",
        ) as pool:
            pids = [p.pid for p in pool.processes]
            # Memory first, on fresh processes (freed memory is kept by the allocator, so
            # RSS after a load run would hide new sessions): one session to warm the code
            # paths, then --hold more.
            asyncio.run(hold(pool.base_url, 2 * workers, seed=10**6))
            before = rss(pool)
            held = asyncio.run(hold(pool.base_url, args.hold))
            per_session = (rss(pool) - before) / len(held)
            asyncio.run(close_all(pool.base_url, held))
            asyncio.run(load(pool.base_url, 16, args.steps, 2.0, pids))  # warm-up
            for clients in args.clients:
                result = asyncio.run(load(pool.base_url, clients, args.steps, args.seconds, pids))
                rows.append({"workers": workers, "clients": clients, **result})
                rows[-1]["KiB/session"] = per_session / 1024
                print(rows[-1], flush=True)
    print(f"\nescape_room easy, {args.steps} steps per session, {args.seconds:g} s per row")
    print(f"load average at the end: {psutil.getloadavg()[0]:.1f} on {psutil.cpu_count()} cores")
    print(
        "| processes | clients | sessions/s | steps/s | 429s | server CPU (cores) "
        "| server CPU ms / request | load generator CPU (cores) | memory per held session |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['workers']} | {r['clients']} | {r['sessions/s']:.0f} | {r['steps/s']:.0f} | "
            f"{r['busy']} | {r['server CPU share']:.2f} | {r['server ms/request']:.2f} | "
            f"{r['client CPU share']:.2f} | {r['KiB/session']:.0f} KiB |"
        )


if __name__ == "__main__":
    main()
