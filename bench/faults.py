"""Fault injection: an eval against a model server that misbehaves on a share of requests.

The scripted OpenAI-compatible server (agentharness.testing.openai_server) fails
``--rate`` of the requests, spread evenly over every kind it knows: HTTP 500/429, a stall
past the client's timeout, a connection dropped before the answer or in the middle of
it, status 200 with truncated or invalid JSON, with an HTML page, with no message (or no
choices), a good answer carrying an image whose base64 is malformed, and a slow answer.
The instances file has bad lines too: instances whose public or hidden data the task
cannot read, and repeated lines.

The eval runs as ``bootcamp eval --agent openai --instances FILE`` does (the CLI's
instances reader, the runner, a run directory), in this process so the client's timeout
can be shorter than the stall (the CLI keeps the agent's 120 s). Afterwards the run
directory is read back and checked: every distinct (instance, sample) is recorded exactly
once, whatever happened to it.

    python bench/faults.py [--episodes 300] [--rate 0.2] [--max-retries 5] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from agentharness import get_task
from agentharness.agents.openai_agent import OpenAIAgent
from agentharness.rollout.runner import distinct_instances, plan_instances, run
from agentharness.store import RunDir, read_instances  # as `bootcamp eval --instances` does
from agentharness.store.schema import EpisodeRecord
from agentharness.testing.openai_server import Faults, ScriptedOpenAIServer, cycle_tools_policy

TASKS = ("escape_room", "tsp_vision")
ERRORS = ("agent_error", "env_error", "timeout")


def write_instances(path: Path, n: int, bad: int, duplicates: int, seed: int) -> dict[str, int]:
    """``n`` instances over TASKS, ``bad`` of them unusable, plus ``duplicates`` repeated lines."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        inst = get_task(TASKS[i % len(TASKS)]).instance(i, "easy")
        lines.append(inst)
    for j, i in enumerate(rng.sample(range(n), bad)):
        inst = lines[i]
        if j % 3 == 0:
            inst = inst.model_copy(update={"hidden": {}})
        elif j % 3 == 1:
            inst = inst.model_copy(update={"public": {}})
        else:  # one field missing
            key = sorted(inst.hidden)[0]
            inst = inst.model_copy(
                update={"hidden": {k: v for k, v in inst.hidden.items() if k != key}}
            )
        lines[i] = inst
    text = [inst.model_dump_json() for inst in lines]
    text += [text[rng.randrange(n)] for _ in range(duplicates)]
    rng.shuffle(text)
    path.write_text("\n".join(text) + "\n")
    return {"lines": len(text), "distinct": n, "bad": bad, "repeated": duplicates}


def cause(error: str | None) -> str:
    """A short name for an episode's error, to count them by kind."""
    text = error or ""
    if "last error: " in text:  # the agent gave up: what its last attempt met
        last = text.split("last error: ", 1)[1]
        return "gave up; last: " + last.split(" (", 1)[0].split(": ", 1)[0][:50]
    return text.split(": ", 1)[0][:60]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300, help="distinct instances (k=1)")
    parser.add_argument("--rate", type=float, default=0.2, help="share of requests that misbehave")
    parser.add_argument("--bad", type=float, default=0.03, help="share of unusable instances")
    parser.add_argument("--repeat", type=float, default=0.05, help="share of repeated lines")
    parser.add_argument("--max-retries", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=1.0, help="client request timeout (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="faults-") as tmp:
        work = Path(tmp)
        inst_file = work / "instances.jsonl"
        made = write_instances(
            inst_file,
            args.episodes,
            bad=round(args.episodes * args.bad),
            duplicates=round(args.episodes * args.repeat),
            seed=args.seed,
        )
        instances, repeated = distinct_instances(read_instances(inst_file))
        made["dropped_as_repeated"] = repeated  # as `bootcamp eval --instances` drops them
        items = plan_instances(instances)
        faults = Faults.every_kind(
            args.rate, stall_s=args.timeout * 1.5, slow_s=args.timeout / 4, seed=args.seed
        )
        run_dir = RunDir(work / "run")
        run_dir.create({"command": "bench/faults.py"})
        policy = cycle_tools_policy(turns=3)
        with ScriptedOpenAIServer(policy=policy, faults=faults) as server:
            agent = OpenAIAgent(
                "scripted",
                base_url=server.base_url,
                concurrency=args.concurrency,
                max_retries=args.max_retries,
                backoff_s=0.05,
                request_timeout_s=args.timeout,
            )

            async def go() -> object:
                try:
                    return await run(items, agent, run_dir, concurrency=args.concurrency)
                finally:
                    await agent.aclose()

            t0 = time.perf_counter()
            result = asyncio.run(go())
            wall = time.perf_counter() - t0
            stats = dict(server.stats)

        lines = [ln for ln in run_dir.episodes_path.read_text().splitlines() if ln.strip()]
        records = [EpisodeRecord.model_validate_json(ln) for ln in lines]
        ids = Counter(r.episode_id for r in records)
        planned = {
            EpisodeRecord.make_id(it.materialize_stub(), it.sample, agent.name) for it in items
        }
        ends = Counter(r.end_reason for r in records)
        errors = Counter(
            f"{r.end_reason}: {cause(r.error)}" for r in records if r.end_reason in ERRORS
        )
        notes = sum(
            1
            for r in records
            for m in r.messages
            if m.role == "assistant" and "malformed base64" in m.text
        )
        figures = {
            "instances": made,
            "episodes_planned": len(planned),
            "episodes_recorded": len(records),
            "completed": sum(1 for r in records if r.end_reason not in ERRORS),
            "episodes_retried": sum(1 for r in records if r.usage.retries),
            "retries": sum(r.usage.retries for r in records),
            "requests_client": sum(r.usage.requests for r in records),
            "requests_server": sum(stats.values()),
            "recorded_as_errors": dict(errors),
            "end_reasons": dict(ends),
            "images_dropped_with_a_note": notes,
            "lost": len(planned - set(ids)),
            "duplicated": sum(c - 1 for c in ids.values()),
            "unplanned": len(set(ids) - planned),
            "server": stats,
            "runner_ran": result.ran,  # type: ignore[attr-defined]
            "wall_s": round(wall, 1),
        }
    if args.json:
        print(json.dumps(figures))
        return
    print(json.dumps(figures, indent=2))
    print(
        f"\n{figures['episodes_planned']} episodes: {figures['completed']} completed, "
        f"{figures['episodes_retried']} retried ({figures['retries']} retries), "
        f"{sum(errors.values())} recorded as errors, {figures['lost']} lost, "
        f"{figures['duplicated']} duplicated"
    )
    if figures["lost"] or figures["duplicated"] or figures["unplanned"]:
        raise SystemExit("FAILED: episodes lost or duplicated")


if __name__ == "__main__":
    main()
