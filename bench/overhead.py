"""Harness overhead per turn (parse + dispatch + log) with the expert agent on escape_room.

Plays expert episodes and splits each turn's cost into

* parse    — reading tool calls out of the assistant turn (native and the same turn as text),
* dispatch — ``Episode.step`` minus the tool's own run time: validation, the executor's
  thread hop and timeout, message building, budget checks,
* tool     — the tool method itself (the simulator: the baseline the overhead is compared to),
* log      — building the episode record and appending it to ``episodes.jsonl``
  (with fsync), amortized over the episode's turns.

    python bench/overhead.py [--episodes 200] [--difficulty medium]

Reported as medians over turns (log: over episodes, per turn), in microseconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from agentharness import get_task
from agentharness.agents.textformat import as_plain_text
from agentharness.core.parsing import parse_turn
from agentharness.core.registry import episode_for
from agentharness.store import EpisodeRecord, RunDir, Timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--difficulty", default="medium")
    parser.add_argument("--task", default="escape_room")
    args = parser.parse_args()
    spec = get_task(args.task)
    parse_native, parse_text, dispatch, tool, log = [], [], [], [], []
    turns_total = 0
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(tmp)
        run_dir.create({"bench": "overhead"})
        for seed in range(args.episodes):
            instance = spec.instance(seed, args.difficulty)
            episode = episode_for(instance)
            expert = spec.expert(instance)
            while not episode.done:
                turn = expert.next_turn(list(episode.messages))
                t0 = time.perf_counter()
                parse_turn(turn)
                parse_native.append(time.perf_counter() - t0)
                text_turn = as_plain_text(turn)
                t0 = time.perf_counter()
                parse_turn(text_turn)
                parse_text.append(time.perf_counter() - t0)
                n_calls = len(episode.tool_calls)
                t0 = time.perf_counter()
                episode.step(turn)
                step = time.perf_counter() - t0
                tool_s = sum(c.metrics.get("latency_s", 0.0) for c in episode.tool_calls[n_calls:])
                tool.append(tool_s)
                dispatch.append(step - tool_s)
            turns_total += episode.turns
            t0 = time.perf_counter()
            record = EpisodeRecord.from_episode(
                episode, agent="expert", sample=0, timings=Timings(started_at=0.0)
            )
            run_dir.append(record)
            log.append((time.perf_counter() - t0) / max(1, episode.turns))

    def us(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1e6:.0f}"

    overhead = [p + d for p, d in zip(parse_native, dispatch, strict=True)]
    print(
        f"task={spec.id} difficulty={args.difficulty} episodes={args.episodes} turns={turns_total}"
    )
    print(
        "| per turn (median, µs) | parse native | parse text | dispatch | log | tool (baseline) "
        "| harness total | harness / tool |"
    )
    print("|---|---|---|---|---|---|---|---|")
    total = statistics.median(overhead) + statistics.median(log)
    print(
        f"| {spec.id} | {us(parse_native)} | {us(parse_text)} | {us(dispatch)} | {us(log)} | {us(tool)} "
        f"| {total * 1e6:.0f} | {total / statistics.median(tool):.1f} |"
    )


if __name__ == "__main__":
    main()
