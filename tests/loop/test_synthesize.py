from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from loop_helpers import make_run, records_of

from agentharness import get_task
from agentharness.agents import ExpertAgent
from agentharness.core import registry
from agentharness.loop.knobs import config_bins
from agentharness.loop.mine import FailureCluster, mine
from agentharness.loop.synthesize import allocate, synthesize
from agentharness.rollout.runner import run_one


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory) -> list:  # type: ignore[type-arg]
    """A noisy student on guess (medium) and on tsp_vision (easy)."""
    root = tmp_path_factory.mktemp("synth")
    make_run(root / "guess", "noisy:0.5", n=12)
    make_run(root / "tsp", "noisy:0.8", "tsp_vision", n=6, difficulty="easy")
    return records_of(root / "guess") + records_of(root / "tsp")


def test_synthesized_instances_reproduce_their_failure_conditions(failures: list) -> None:  # type: ignore[type-arg]
    report = mine(failures)
    assert {c.task for c in report.clusters} == {"guess-v1", get_task("tsp_vision").id}
    clusters = {c.id: c for c in report.clusters}
    by_episode = {r.episode_id: r for r in failures}
    heldout = {get_task("guess").instance(100, "medium").instance_id}
    instances, synth = synthesize(failures, n=14, seed=3, exclude=heldout)
    assert synth.written == len(instances) == 14 and synth.unfilled == 0
    assert synth.by_variant["neighbour"] >= 7 and synth.by_variant.get("harder", 0) >= 2
    parents = {r.instance.instance_id: r.instance for r in failures}
    assert len({i.instance_id for i in instances}) == 14
    for inst in instances:
        prov = inst.provenance
        assert prov is not None
        cluster = clusters[prov["cluster"]]
        spec = get_task(inst.task)
        parent = parents[prov["parent"]]
        assert inst.task == cluster.task == parent.task
        assert inst.instance_id not in parents and inst.instance_id not in heldout
        assert prov["cluster_key"] == cluster.key
        assert prov["failure"] == {"end_reason": cluster.end_reason, "weakest": cluster.weakest}
        assert prov["source_episodes"]
        for eid in prov["source_episodes"]:
            assert eid in cluster.episode_ids
            assert by_episode[eid].instance.instance_id == parent.instance_id
        assert prov["expert_reward"] >= spec.solved_threshold
        assert inst.difficulty == cluster.difficulty == parent.difficulty
        if prov["variant"] == "neighbour":
            assert config_bins(spec, inst.config) == cluster.params
        else:  # a curriculum step: the size knob moves toward the next / previous preset
            size = "high" if inst.task == "guess-v1" else "n_cities"
            assert prov["changed"][size] == [parent.config[size], inst.config[size]]
            grew = inst.config[size] > parent.config[size]
            assert grew == (prov["variant"] == "harder")


def test_the_expert_really_solves_what_was_written(failures: list) -> None:  # type: ignore[type-arg]
    instances, _ = synthesize(failures, n=4, seed=1)
    for inst in instances:
        episode, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
        assert episode.reward().total >= get_task(inst.task).solved_threshold


def test_synthesis_is_a_pure_function_of_records_and_seed(failures: list) -> None:  # type: ignore[type-arg]
    a, ra = synthesize(failures, n=8, seed=5)
    b, rb = synthesize(list(reversed(failures)), n=8, seed=5)
    assert [i.model_dump_json() for i in a] == [i.model_dump_json() for i in b]
    assert ra == rb
    c, _ = synthesize(failures, n=8, seed=6)
    assert [i.instance_id for i in c] != [i.instance_id for i in a]


def test_candidates_the_expert_cannot_solve_are_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = records_of(make_run(tmp_path, "noisy:0.5", n=8))
    impossible = dataclasses.replace(get_task("guess"), solved_threshold=1.01)
    monkeypatch.setitem(registry._REGISTRY, "guess-v1", impossible)
    instances, report = synthesize(records, n=3, seed=0, max_attempts=2)
    assert instances == []
    assert report.rejected == {"expert_failed": 6} and report.unfilled == 3


def test_budget_is_shared_by_failures() -> None:
    def cluster(failures: int) -> FailureCluster:
        return FailureCluster.model_construct(failures=failures)

    cs = [cluster(6), cluster(3), cluster(1)]
    assert allocate(cs, 2) == [1, 1, 0]
    assert allocate(cs, 13) == [7, 4, 2]
    assert sum(allocate(cs, 100)) == 100
    assert allocate([], 5) == [] and allocate(cs, 0) == [0, 0, 0]
