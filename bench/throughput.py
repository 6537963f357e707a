"""Client CPU per turn, and throughput of N concurrent episodes against a 100 ms model server.

The server (agentharness.testing.openai_server, in its own process) answers every request
after a fixed latency L with a scripted policy: three tool-calling turns, then plain text,
which the episode answers with nudges until it ends as ``no_answer`` (six requests per
episode, ``escape_room`` easy).

``cpu`` — the client's CPU per turn (process CPU time / turns; the server's process is
not counted), in the same run for

* *lean*: the harness with the ``openai`` agent: build the request, send it, parse the
  reply and its tool calls, step the episode (tools included), write the log;
  instances are generated before the clock starts (generation is not a per-turn cost);
* *sdk*: the same harness with the plain openai SDK (``chat.completions.create``) as the
  agent's transport;
* *raw*: an aiohttp client posting a fixed, pre-encoded request and reading the reply
  bytes, with no harness at all: the floor a general-purpose client pays per request;
  and the same through the agent's own minimal HTTP/1.1 client (agents/http11.py).

The CPU ceiling is cores / (CPU per turn): the turns per second the client side could
sustain if it had every core.

``bound`` — episodes per second for 1 process (the async runner) and 2 processes (the
Ray backend, ``--backend ray --workers 2``) at each N, as a fraction of the Little's-law
bound N / (L x requests per episode). Timing starts once the workers are up and ends
with the last episode written.

    python bench/throughput.py cpu [--episodes 300] [--concurrency 64] [--repeats 5]
    python bench/throughput.py bound [--sizes 64 256 1024] [--latency 0.1] [--processes 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import orjson

from agentharness import get_task
from agentharness.agents.base import AgentTurn
from agentharness.agents.openai_agent import OpenAIAgent
from agentharness.core.instance import Instance
from agentharness.core.messages import FunctionCall, Message, ToolCall, to_openai_payload
from agentharness.core.registry import episode_for
from agentharness.rollout.runner import WorkItem, plan_instances, run
from agentharness.store import RunDir

TASK = "escape_room"


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


def start_server(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentharness.testing.openai_server",
            "--port",
            str(port),
            "--latency",
            str(latency),
            "--turns",
            "3",
        ],
        stdout=subprocess.DEVNULL,
    )
    wait_for(port)
    return server, f"http://127.0.0.1:{port}/v1"


def instances(n: int) -> list[Instance]:
    spec = get_task(TASK)
    return [spec.instance(seed, "easy") for seed in range(n)]


# -- the plain SDK as the agent's transport ----------------------------------------------------
class SDKAgent:
    """The openai SDK's ``chat.completions.create`` per turn, nothing else changed."""

    name = "openai-sdk:scripted"

    def __init__(self, base_url: str, concurrency: int) -> None:
        import httpx
        import openai

        self.client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key="EMPTY",
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(
                limits=httpx.Limits(max_connections=concurrency)
            ),
        )

    def policy(self, instance: Instance, sample: int = 0) -> SDKAgent:
        return self

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        response = await self.client.chat.completions.create(
            model="scripted",
            messages=to_openai_payload(messages),
            tools=tools,  # type: ignore[arg-type]
        )
        choice = response.choices[0].message
        calls = [
            ToolCall(
                id=tc.id,
                function=FunctionCall(name=tc.function.name, arguments=tc.function.arguments),
            )
            for tc in choice.tool_calls or []
            if tc.type == "function"
        ]
        return AgentTurn(
            Message(role="assistant", content=choice.content, tool_calls=calls or None)
        )

    async def aclose(self) -> None:
        await self.client.close()


async def harness_cpu(agent: Any, items: list[WorkItem], concurrency: int) -> tuple[float, int]:
    """(CPU seconds, turns) of one harness run; instances are generated before the clock."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(tmp)
        run_dir.create({"bench": "cpu"})
        c0 = time.process_time()
        await run(items, agent, run_dir, concurrency=concurrency)
        cpu = time.process_time() - c0
        turns = sum(r.turns for r in run_dir.episodes())
    await agent.aclose()
    return cpu, turns


async def raw_lean_cpu(base_url: str, body: bytes, requests: int, concurrency: int) -> float:
    """The same as :func:`raw_cpu` through the agent's own minimal HTTP/1.1 client."""
    from agentharness.agents.http11 import Http11Pool

    pools = [
        Http11Pool(base_url + "/chat/completions", {"Content-Type": "application/json"})
        for _ in range(concurrency)
    ]
    per = -(-requests // concurrency)

    async def loop(pool: Http11Pool) -> None:
        for _ in range(per):
            await pool.post(body, 60.0)

    c0 = time.process_time()
    await asyncio.gather(*(loop(p) for p in pools))
    cpu = (time.process_time() - c0) / (per * concurrency)
    for p in pools:
        await p.close()
    return cpu


async def raw_cpu(base_url: str, body: bytes, requests: int, concurrency: int) -> float:
    import aiohttp

    url = base_url + "/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer EMPTY"}
    per = -(-requests // concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:

        async def loop() -> None:
            for _ in range(per):
                async with s.post(url, data=body, headers=headers) as r:
                    await r.read()

        c0 = time.process_time()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        return (time.process_time() - c0) / (per * concurrency)


def cpu_mode(args: argparse.Namespace) -> None:
    server, base_url = start_server(args.latency)
    try:
        insts = instances(args.episodes)
        items = plan_instances(insts)
        # The raw client sends the first request of an episode, as the harness would.
        episode = episode_for(insts[0])
        body = orjson.dumps(
            {
                "model": "scripted",
                "messages": to_openai_payload(episode.messages),
                "tools": episode.tools,
            }
        )
        # Warm-up: imports, connections, caches.
        asyncio.run(
            harness_cpu(
                OpenAIAgent("scripted", base_url=base_url, concurrency=args.concurrency),
                items[:16],
                args.concurrency,
            )
        )
        asyncio.run(harness_cpu(SDKAgent(base_url, args.concurrency), items[:16], args.concurrency))
        lean, sdk, raw, raw_lean = [], [], [], []
        turns = 0
        for _ in range(args.repeats):  # interleaved, so drifting load hits all three alike
            agent = OpenAIAgent("scripted", base_url=base_url, concurrency=args.concurrency)
            cpu, turns = asyncio.run(harness_cpu(agent, items, args.concurrency))
            lean.append(cpu / turns)
            cpu, turns_sdk = asyncio.run(
                harness_cpu(SDKAgent(base_url, args.concurrency), items, args.concurrency)
            )
            sdk.append(cpu / turns_sdk)
            raw.append(asyncio.run(raw_cpu(base_url, body, turns, args.concurrency)))
            raw_lean.append(asyncio.run(raw_lean_cpu(base_url, body, turns, args.concurrency)))
    finally:
        server.terminate()
        server.wait()
    cores = os.cpu_count() or 1
    lean_ms, sdk_ms, raw_ms, raw_lean_ms = (
        statistics.median(x) * 1e3 for x in (lean, sdk, raw, raw_lean)
    )
    print(
        f"task={TASK} easy, {args.episodes} episodes x {turns // args.episodes} turns, "
        f"concurrency {args.concurrency}, medians of {args.repeats} interleaved runs"
    )
    print(
        "| client | CPU ms / turn (median) | runs (ms) | vs lean | ceiling turns/s on "
        f"{cores} cores |"
    )
    print("|---|---|---|---|---|")
    for name, value, xs in (
        ("lean (harness, openai agent)", lean_ms, lean),
        ("sdk (harness, openai SDK)", sdk_ms, sdk),
        ("raw aiohttp, fixed body, no harness", raw_ms, raw),
        ("raw agents/http11.py, fixed body, no harness", raw_lean_ms, raw_lean),
    ):
        runs = ", ".join(f"{x * 1e3:.3f}" for x in xs)
        print(
            f"| {name} | {value:.3f} | {runs} | {value / lean_ms:.2f}x | {cores / value * 1e3:.0f} |"
        )


# -- episodes per second for 1 and 2 processes ------------------------------------------------
async def one_process(base_url: str, items: list[WorkItem], n: int) -> tuple[float, int, int]:
    agent = OpenAIAgent("scripted", base_url=base_url, concurrency=n, request_timeout_s=120)
    last = [0.0]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(tmp)
        run_dir.create({"bench": "throughput"})
        t0 = time.perf_counter()
        await run(
            items,
            agent,
            run_dir,
            concurrency=n,
            on_done=lambda _: last.__setitem__(0, time.perf_counter()),
        )
        records = list(run_dir.episodes())
    await agent.aclose()
    return last[0] - t0, len(records), sum(r.usage.requests for r in records)


async def ray_processes(
    base_url: str, items: list[WorkItem], n: int, workers: int
) -> tuple[float, int, int]:
    from agentharness.rollout.ray_backend import AgentSpec, RayConfig, run_ray

    spec = AgentSpec(
        "openai", {"model": "scripted", "base_url": base_url, "concurrency": -(-n // workers)}
    )
    t0, last = [0.0], [0.0]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(tmp)
        run_dir.create({"bench": "throughput"})
        await run_ray(
            items,
            spec,
            run_dir,
            ray_config=RayConfig(workers=workers),
            concurrency=n,
            on_workers=lambda _: t0.__setitem__(0, time.perf_counter()),
            on_received=lambda _: last.__setitem__(0, time.perf_counter()),
        )
        records = list(run_dir.episodes())
    return last[0] - t0[0], len(records), sum(r.usage.requests for r in records)


def bound_mode(args: argparse.Namespace) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 16384)), hard))
    server, base_url = start_server(args.latency)
    started_ray = False
    try:
        if any(p > 1 for p in args.processes):
            import ray

            ray.init(
                address="local",
                num_cpus=max(args.processes),
                include_dashboard=False,
                log_to_driver=False,
                logging_level="WARNING",
            )
            started_ray = True
        asyncio.run(one_process(base_url, plan_instances(instances(8)), 8))  # warm-up
        print(
            f"| N | processes | episodes | requests/episode | wall s (median of {args.repeats}) "
            "| episodes/s | bound N/(L x requests) | fraction of bound |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for n in args.sizes:
            items = plan_instances(instances(args.waves * n))
            for p in args.processes:
                walls, eps, reqs = [], 0, 0
                for _ in range(args.repeats):
                    if p == 1:
                        wall, eps, reqs = asyncio.run(one_process(base_url, items, n))
                    else:
                        wall, eps, reqs = asyncio.run(ray_processes(base_url, items, n, p))
                    walls.append(wall)
                wall = statistics.median(walls)
                per_episode = reqs / eps
                bound = n / (args.latency * per_episode)
                rate = eps / wall
                print(
                    f"| {n} | {p} | {eps} | {per_episode:.1f} | {wall:.2f} | {rate:.1f} | "
                    f"{bound:.1f} | {rate / bound:.2f} |",
                    flush=True,
                )
    finally:
        if started_ray:
            import ray

            ray.shutdown()
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", choices=("cpu", "bound"), default="bound")
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--waves", type=int, default=5, help="bound: episodes = waves x N")
    parser.add_argument(
        "--latency",
        type=float,
        default=None,
        help="server latency, s (default 0.1 for bound, 0.02 for cpu)",
    )
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--episodes", type=int, default=300, help="cpu: episodes per run")
    parser.add_argument("--concurrency", type=int, default=64, help="cpu: episodes in flight")
    args = parser.parse_args()
    if args.mode == "cpu":
        args.latency = 0.02 if args.latency is None else args.latency
        args.repeats = args.repeats or 5
        cpu_mode(args)
    else:
        args.latency = 0.1 if args.latency is None else args.latency
        args.repeats = args.repeats or 3
        bound_mode(args)


if __name__ == "__main__":
    main()
