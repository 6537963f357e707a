"""Synthesize new instances aimed at mined failures: a curriculum around each cluster.

For every failure cluster (see :mod:`agentharness.loop.mine`) new instances are made from
the configs of the instances that failed:

* ``neighbour`` — the same task, difficulty label and knob bins (the failure conditions),
  knobs nudged within their bins (ints one step, floats ~10%) and a fresh seed;
* ``harder`` / ``easier`` — the knobs moved half-way toward the next harder / easier
  difficulty preset (extrapolated past the last preset); the difficulty label stays the
  failed instance's, the variant is in the provenance.

Slots cycle neighbour, harder, neighbour, easier, so half of a cluster's instances
reproduce its conditions. The budget ``n`` is shared between clusters in proportion to
their failures (each cluster gets one first while the budget lasts).

Every candidate is validated before it is kept: the task's expert must solve it
(reward >= ``spec.solved_threshold``); a candidate that fails generation or validation
is retried with a new seed (up to ``max_attempts``). Each kept instance records its
provenance: the cluster, the failed episodes it came from, the parent instance and the
variant. Everything is a pure function of the records, ``n`` and ``seed``.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from agentharness.agents.scripted import ExpertAgent
from agentharness.core.instance import Instance
from agentharness.core.registry import UnknownTaskError, get_task
from agentharness.core.task import TaskSpec
from agentharness.loop.knobs import neighbour_config, shifted_config
from agentharness.loop.mine import FailureCluster, MineReport, mine
from agentharness.store.schema import EpisodeRecord

VARIANT_CYCLE = ("neighbour", "harder", "neighbour", "easier")
SEED_RANGE = (1_000_000, 2**31 - 1)


class ClusterSynth(BaseModel):
    cluster: str
    key: str
    allocated: int
    written: int
    by_variant: dict[str, int]


class SynthReport(BaseModel):
    """What synthesis did: per cluster, per variant, and why candidates were rejected."""

    requested: int
    written: int
    seed: int
    by_variant: dict[str, int]
    rejected: dict[str, int] = Field(
        description="candidates dropped: generation_error, expert_failed, duplicate, unknown_task"
    )
    unfilled: int = Field(description="slots left empty after max_attempts")
    clusters: list[ClusterSynth]


@dataclass(frozen=True)
class _Slot:
    cluster: FailureCluster
    index: int
    variant: str
    parent: Instance
    source_episodes: tuple[str, ...]


@dataclass(frozen=True)
class _Candidate:
    slot: _Slot
    variant: str
    config: dict[str, Any]
    seed: int


def allocate(clusters: Sequence[FailureCluster], n: int) -> list[int]:
    """Split ``n`` over clusters: one each in rank order, the rest by failures (largest remainder)."""
    if n <= 0 or not clusters:
        return [0] * len(clusters)
    if n <= len(clusters):
        return [1 if i < n else 0 for i in range(len(clusters))]
    alloc = [1] * len(clusters)
    rest = n - len(clusters)
    total = sum(c.failures for c in clusters)
    quotas = [rest * c.failures / total for c in clusters]
    alloc = [a + int(q) for a, q in zip(alloc, quotas, strict=True)]
    left = n - sum(alloc)
    order = sorted(range(len(clusters)), key=lambda i: (-(quotas[i] - int(quotas[i])), i))
    for i in order[:left]:
        alloc[i] += 1
    return alloc


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _slots(
    report: MineReport, records: Sequence[EpisodeRecord], n: int
) -> tuple[list[_Slot], list[tuple[FailureCluster, int]]]:
    by_instance: dict[str, Instance] = {}
    episodes_of: dict[tuple[str, str], list[str]] = {}
    wanted = {eid for c in report.clusters for eid in c.episode_ids}
    for r in records:
        if r.episode_id in wanted:
            by_instance.setdefault(r.instance.instance_id, r.instance)
    slots: list[_Slot] = []
    plan: list[tuple[FailureCluster, int]] = []
    for cluster, count in zip(report.clusters, allocate(report.clusters, n), strict=True):
        plan.append((cluster, count))
        parents = [by_instance[i] for i in cluster.instance_ids if i in by_instance]
        if not parents:
            continue
        members = {eid for eid in cluster.episode_ids}
        for r in records:
            if r.episode_id in members:
                key = (cluster.id, r.instance.instance_id)
                episodes_of.setdefault(key, []).append(r.episode_id)
        for j in range(count):
            parent = parents[(j + j // len(VARIANT_CYCLE)) % len(parents)]
            slots.append(
                _Slot(
                    cluster=cluster,
                    index=j,
                    variant=VARIANT_CYCLE[j % len(VARIANT_CYCLE)],
                    parent=parent,
                    source_episodes=tuple(
                        sorted(episodes_of.get((cluster.id, parent.instance_id), []))
                    ),
                )
            )
    return slots, plan


def _candidate(spec: TaskSpec, slot: _Slot, seed: int, attempt: int) -> _Candidate:
    rng = _rng(seed, slot.cluster.id, slot.index, attempt)
    config: dict[str, Any] | None = None
    variant = slot.variant
    if variant in ("harder", "easier"):
        direction = 1 if variant == "harder" else -1
        config = shifted_config(spec, slot.parent.config, slot.parent.difficulty, direction)
    if config is None:  # no room to move that way: reproduce the conditions instead
        variant = "neighbour"
        config = neighbour_config(spec, slot.parent.config, rng)
    return _Candidate(slot=slot, variant=variant, config=config, seed=rng.randrange(*SEED_RANGE))


async def _validate(
    spec: TaskSpec, cand: _Candidate, sem: asyncio.Semaphore
) -> tuple[Instance | None, float, str]:
    from agentharness.rollout.runner import run_one

    async with sem:
        try:
            model = spec.config_model.model_validate(cand.config)
            instance = await asyncio.to_thread(
                spec.instance_from_config, model, cand.seed, cand.slot.parent.difficulty
            )
        except Exception:
            return None, 0.0, "generation_error"
        episode, _ = await run_one(instance, ExpertAgent().policy(instance))
        score = episode.reward().total
        if score < spec.solved_threshold:
            return None, score, "expert_failed"
        return instance, score, "ok"


def _provenance(cand: _Candidate, expert_reward: float, seed: int) -> dict[str, Any]:
    slot, parent = cand.slot, cand.slot.parent
    changed = {
        k: [parent.config.get(k), v] for k, v in cand.config.items() if parent.config.get(k) != v
    }
    return {
        "synthesized_by": "agentharness.loop.synthesize",
        "variant": cand.variant,
        "cluster": slot.cluster.id,
        "cluster_key": slot.cluster.key,
        "conditions": {
            "task": slot.cluster.task,
            "difficulty": slot.cluster.difficulty,
            "params": slot.cluster.params,
        },
        "failure": {"end_reason": slot.cluster.end_reason, "weakest": slot.cluster.weakest},
        "source_episodes": list(slot.source_episodes),
        "parent": parent.instance_id,
        "parent_seed": parent.seed,
        "changed": changed,
        "expert_reward": round(expert_reward, 6),
        "synth_seed": seed,
        "slot": slot.index,
    }


async def asynthesize(
    records: Iterable[EpisodeRecord],
    *,
    n: int,
    seed: int = 0,
    exclude: Iterable[str] = (),
    concurrency: int = 4,
    max_attempts: int = 4,
    report: MineReport | None = None,
) -> tuple[list[Instance], SynthReport]:
    """Async :func:`synthesize` (expert validations run concurrently, results stay ordered)."""
    recs = sorted(records, key=lambda r: r.episode_id)
    report = report if report is not None else mine(recs)
    slots, plan = _slots(report, recs, n)
    taken: set[str] = set(exclude) | {r.instance.instance_id for r in recs}
    rejected: Counter[str] = Counter()
    kept: dict[int, Instance] = {}
    sem = asyncio.Semaphore(max(1, concurrency))
    specs: dict[str, TaskSpec] = {}
    pending = list(range(len(slots)))
    for i in pending:
        try:
            specs.setdefault(slots[i].cluster.task, get_task(slots[i].cluster.task))
        except UnknownTaskError:
            rejected["unknown_task"] += 1
    pending = [i for i in pending if slots[i].cluster.task in specs]

    for attempt in range(max_attempts):
        if not pending:
            break
        cands = [_candidate(specs[slots[i].cluster.task], slots[i], seed, attempt) for i in pending]
        results = await asyncio.gather(
            *(_validate(specs[c.slot.cluster.task], c, sem) for c in cands)
        )
        still: list[int] = []
        for i, cand, (instance, score, status) in zip(pending, cands, results, strict=True):
            if instance is not None and instance.instance_id in taken:
                instance, status = None, "duplicate"
            if instance is None:
                rejected[status] += 1
                still.append(i)
                continue
            taken.add(instance.instance_id)
            kept[i] = instance.model_copy(update={"provenance": _provenance(cand, score, seed)})
        pending = still

    instances = [kept[i] for i in sorted(kept)]
    variants = Counter(str((inst.provenance or {}).get("variant")) for inst in instances)
    per_cluster: dict[str, Counter[str]] = {}
    for inst in instances:
        prov = inst.provenance or {}
        per_cluster.setdefault(str(prov.get("cluster")), Counter())[str(prov.get("variant"))] += 1
    synth = SynthReport(
        requested=n,
        written=len(instances),
        seed=seed,
        by_variant=dict(sorted(variants.items())),
        rejected=dict(sorted(rejected.items())),
        unfilled=len(pending),
        clusters=[
            ClusterSynth(
                cluster=c.id,
                key=c.key,
                allocated=count,
                written=sum(per_cluster.get(c.id, Counter()).values()),
                by_variant=dict(sorted(per_cluster.get(c.id, Counter()).items())),
            )
            for c, count in plan
            if count
        ],
    )
    return instances, synth


def synthesize(
    records: Iterable[EpisodeRecord],
    *,
    n: int,
    seed: int = 0,
    exclude: Iterable[str] = (),
    concurrency: int = 4,
    max_attempts: int = 4,
    report: MineReport | None = None,
) -> tuple[list[Instance], SynthReport]:
    """Up to ``n`` expert-validated instances around the failures in ``records``.

    ``exclude`` holds instance ids never to produce (e.g. a held-out set); the failed
    instances themselves are always excluded. Returns the instances (in cluster rank and
    slot order) and a report of what was made and rejected.
    """
    return asyncio.run(
        asynthesize(
            records,
            n=n,
            seed=seed,
            exclude=exclude,
            concurrency=concurrency,
            max_attempts=max_attempts,
            report=report,
        )
    )


__all__ = [
    "VARIANT_CYCLE",
    "SynthReport",
    "allocate",
    "asynthesize",
    "synthesize",
]
