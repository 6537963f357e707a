from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from loop_helpers import make_run, records_of

from agentharness.loop.checks import LoopInputError
from agentharness.loop.compare import bootstrap_delta_ci, compare
from agentharness.store import EpisodeRecord


@pytest.mark.parametrize("paired", [True, False])
def test_intervals_cover_the_true_difference_near_nominal(paired: bool) -> None:
    """Synthetic rewards with a known mean difference: ~95% of 95% intervals contain it."""
    data_rng = np.random.default_rng(12345)
    boot_rng = np.random.default_rng(7)
    true_delta, n, trials, covered = 0.1, 40, 400, 0
    for _ in range(trials):
        if paired:  # per-instance difficulty shared by both runs
            skill = data_rng.uniform(0, 1, n)
            a = 0.8 * skill  # mean 0.4
            b = 0.4 * skill + 0.5 * data_rng.uniform(0, 1, n)  # mean 0.2 + 0.25 + 0.05
            b = b + (true_delta - 0.05)  # mean exactly 0.4 + true_delta
        else:
            a = data_rng.beta(2, 3, n)  # mean 0.4
            b = data_rng.beta(2.5, 2.5, n)  # mean 0.5
        ci = bootstrap_delta_ci(a, b, paired=paired, rng=boot_rng, n_boot=1000)
        assert ci is not None
        covered += ci[0] <= true_delta <= ci[1]
    coverage = covered / trials
    assert 0.90 <= coverage <= 0.985, coverage


def test_pairing_tightens_the_interval() -> None:
    rng = np.random.default_rng(0)
    skill = rng.uniform(0, 1, 30)
    a, b = skill, skill + 0.05 + rng.normal(0, 0.02, 30)
    paired = bootstrap_delta_ci(a, b, paired=True, rng=np.random.default_rng(1))
    unpaired = bootstrap_delta_ci(a, b, paired=False, rng=np.random.default_rng(1))
    assert paired is not None and unpaired is not None
    assert paired[0] > 0  # the improvement is clear once instance difficulty is paired out
    assert paired[1] - paired[0] < (unpaired[1] - unpaired[0]) / 4
    assert bootstrap_delta_ci([0.5], [0.7], paired=True, rng=np.random.default_rng(0)) is None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    root = tmp_path_factory.mktemp("cmp")
    return {
        "noisy": records_of(make_run(root / "noisy", "noisy:0.2", n=12, k=2)),
        "expert": records_of(make_run(root / "expert", "expert", n=12)),
        "other_seeds": records_of(make_run(root / "other", "expert", n=12, seed=50)),
    }


def test_compare_pairs_by_instance_and_is_seeded(runs: dict[str, list[EpisodeRecord]]) -> None:
    report = compare(runs["noisy"], runs["expert"], seed=3)
    (t,) = report.tasks
    assert t.paired and t.common_instances == 12 and t.episodes_a == 24
    assert t.reward.delta > 0 and t.reward.ci is not None and t.reward.ci[0] > 0
    assert t.verdict == "better" and report.overall is None
    assert abs(t.reward.a - np.mean([r.reward.total for r in runs["noisy"]])) < 1e-9
    assert compare(runs["noisy"], runs["expert"], seed=3) == report
    assert compare(runs["noisy"], runs["expert"], seed=4).tasks[0].reward.ci != t.reward.ci
    back = compare(runs["expert"], runs["noisy"], seed=3).tasks[0]
    assert back.verdict == "worse" and abs(back.reward.delta + t.reward.delta) < 1e-12


def test_paired_counts_say_which_instances_moved(runs: dict[str, list[EpisodeRecord]]) -> None:
    def per_instance(records: list[EpisodeRecord]) -> dict[str, tuple[float, float]]:
        out: dict[str, list[EpisodeRecord]] = {}
        for r in records:
            out.setdefault(r.instance.instance_id, []).append(r)
        return {
            k: (
                float(np.mean([r.reward.total for r in rs])),
                float(np.mean([r.reward.success for r in rs])),
            )
            for k, rs in out.items()
        }

    noisy, expert = per_instance(runs["noisy"]), per_instance(runs["expert"])
    up = sum(expert[k][0] > noisy[k][0] for k in noisy)
    down = sum(expert[k][0] < noisy[k][0] for k in noisy)
    unsolved = sum(noisy[k][1] < 0.5 for k in noisy)
    assert up > 0 and unsolved > 0  # the noisy agent misses some instances the expert solves
    (t,) = compare(runs["noisy"], runs["expert"]).tasks
    assert (t.wins, t.losses, t.solved_gained, t.solved_lost) == (up, down, unsolved, 0)
    (back,) = compare(runs["expert"], runs["noisy"]).tasks
    assert (back.wins, back.losses, back.solved_gained, back.solved_lost) == (down, up, 0, unsolved)
    assert t.wins_text() == f"+{up} / -{down} (solved +{unsolved} / -0)"
    (same,) = compare(runs["noisy"], runs["noisy"]).tasks
    assert (same.wins, same.losses, same.solved_gained, same.solved_lost) == (0, 0, 0, 0)
    (unpaired,) = compare(runs["noisy"], runs["other_seeds"]).tasks
    assert unpaired.wins is None and unpaired.wins_text() == "-"


def test_different_instances_are_compared_unpaired(runs: dict[str, list[EpisodeRecord]]) -> None:
    (t,) = compare(runs["noisy"], runs["other_seeds"]).tasks
    assert not t.paired and t.common_instances == 0 and t.reward.ci is not None


def test_mixed_task_versions_are_refused(runs: dict[str, list[EpisodeRecord]]) -> None:
    v2 = [
        r.model_copy(
            update={
                "task": "guess-v2",
                "instance": r.instance.model_copy(update={"task": "guess-v2"}),
            }
        )
        for r in runs["expert"]
    ]
    with pytest.raises(LoopInputError, match="guess-v1 in run A but guess-v2 in run B"):
        compare(runs["noisy"], v2)


def test_no_common_task_is_a_clear_error(
    tmp_path: Path, runs: dict[str, list[EpisodeRecord]]
) -> None:
    tsp = records_of(make_run(tmp_path, "expert", "tsp_vision", n=2, difficulty="easy"))
    with pytest.raises(LoopInputError, match="no task in common"):
        compare(runs["noisy"], tsp)
