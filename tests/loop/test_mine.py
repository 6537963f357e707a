from __future__ import annotations

from pathlib import Path

from loop_helpers import make_run, records_of

from agentharness.core.reward import Reward, RewardComponent
from agentharness.loop.mine import mine, weakest_component


def test_clusters_partition_the_failures_with_rates(noisy_guess: Path) -> None:
    records = records_of(noisy_guess)
    report = mine(records)
    failed = {r.episode_id for r in records if not r.reward.success}
    assert report.failures == len(failed) > 0
    assert report.episodes == len(records)
    clustered = [e for c in report.clusters for e in c.episode_ids]
    assert sorted(clustered) == sorted(failed)  # every failure in exactly one cluster
    assert abs(sum(c.share for c in report.clusters) - 1.0) < 1e-9
    by_id = {r.episode_id: r for r in records}
    for c in report.clusters:
        members = [by_id[e] for e in c.episode_ids]
        assert {m.end_reason for m in members} == {c.end_reason}
        assert {weakest_component(m.reward) for m in members} == {c.weakest}
        assert {m.difficulty for m in members} == {c.difficulty} == {"medium"}
        assert c.params == {"high": "[550,5500) ~medium"} and c.off_preset == {}
        assert c.episodes == len(records)  # all episodes share these conditions
        assert c.rate == c.failures / c.episodes
        assert 1 <= len(c.examples) <= 3
    counts = [c.failures for c in report.clusters]
    assert counts == sorted(counts, reverse=True)
    assert "failed" in report.summary_lines()[0]


def test_mine_is_a_pure_function_of_the_records(noisy_guess: Path) -> None:
    records = records_of(noisy_guess)
    a = mine(records).model_dump_json()
    assert mine(list(reversed(records))).model_dump_json() == a
    assert mine(records).model_dump_json() == a


def test_conditions_separate_difficulties_and_knob_bins(tmp_path: Path) -> None:
    make_run(tmp_path / "a", "noisy:0.6", n=8, difficulty="easy")
    make_run(tmp_path / "b", "noisy:0.6", n=8, difficulty="easy", high=3000)
    records = records_of(tmp_path / "a") + records_of(tmp_path / "b")
    report = mine(records)
    conditions = {(c.difficulty, c.params["high"]) for c in report.clusters}
    assert ("easy", "[550,5500) ~medium") in conditions
    off = [c for c in report.clusters if c.params["high"].startswith("[550")]
    assert off and all(c.off_preset == {"high": "[550,5500) ~medium"} for c in off)
    for c in off:
        assert c.episodes == 8  # rate is relative to the episodes under the same knobs
    # knob bins that vary within a task get their own failure table
    groups = {s.group for s in report.by_knob}
    assert groups == {"guess-v1: high <550 ~easy", "guess-v1: high [550,5500) ~medium"}


def test_weakest_component_is_the_lowest_and_ties_go_to_the_first() -> None:
    def reward(*values: tuple[str, float, float]) -> Reward:
        comps = [RewardComponent(name=n, value=v, weight=w) for n, v, w in values]
        return Reward.from_components(comps, success=False)

    assert weakest_component(reward(("a", 0.5, 1), ("b", 0.2, 0.1))) == "b"
    assert weakest_component(reward(("validity", 0.0, 0.0), ("optimality", 0.0, 1.0))) == "validity"
    assert weakest_component(Reward.zero("crashed")) == "none"


def test_no_failures_gives_no_clusters(tmp_path: Path) -> None:
    report = mine(records_of(make_run(tmp_path, "expert", n=3)))
    assert report.failures == 0 and report.clusters == []
    assert report.summary_lines()[0].startswith("0 of 3")
