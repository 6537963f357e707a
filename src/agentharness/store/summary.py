"""Per-task summaries of a run: the figures ``bootcamp report`` prints."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from math import comb
from typing import Any

from agentharness.store.schema import EpisodeRecord


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` successes (Chen et al., 2021)."""
    if k > n:
        k = n
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def summarize(records: list[EpisodeRecord]) -> dict[str, dict[str, Any]]:
    """Per task: episodes, instances, mean reward, success rate, pass@1/pass@k, end reasons."""
    by_task: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    out: dict[str, dict[str, Any]] = {}
    for task, recs in sorted(by_task.items()):
        by_instance: dict[str, list[bool]] = defaultdict(list)
        for r in recs:
            by_instance[r.instance.instance_id].append(r.reward.success)
        k = max(len(v) for v in by_instance.values())
        out[task] = {
            "episodes": len(recs),
            "instances": len(by_instance),
            "mean_reward": statistics.fmean(r.reward.total for r in recs),
            "success_rate": statistics.fmean(float(r.reward.success) for r in recs),
            "pass@1": statistics.fmean(pass_at_k(len(v), sum(v), 1) for v in by_instance.values()),
            "k": k,
            f"pass@{k}": statistics.fmean(
                pass_at_k(len(v), sum(v), k) for v in by_instance.values()
            ),
            "mean_turns": statistics.fmean(r.turns for r in recs),
            "tool_errors": sum(r.tool_errors for r in recs),
            "format_errors": sum(r.format_errors for r in recs),
            "end_reasons": dict(Counter(r.end_reason for r in recs).most_common()),
            "difficulties": dict(Counter(r.difficulty for r in recs)),
            "agents": sorted({r.agent for r in recs}),
            "tokens": sum(r.usage.total_tokens for r in recs),
        }
    return out
