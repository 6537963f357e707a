"""Dynamic sampling in GRPO's rollout function (``resample_flat``), with a scripted roller:
which groups train, which are set aside, and what the rollouts log keeps of both."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentharness.core.instance import Instance
from agentharness.core.registry import get_task
from agentharness.rollout.runner import failed_record
from agentharness.store.reader import load_runs
from agentharness.train.grpo import (
    GRPOOptions,
    Rollout,
    RolloutStreams,
    make_rollout_func,
    prompt_key,
    rl_rows,
)

GROUP = 4


@dataclass
class ScriptedRoller:
    """Plays a group on an instance by looking up, by seed, which of its episodes succeed."""

    opts: GRPOOptions
    outcomes: dict[int, list[bool]]
    played: list[tuple[int, int]] = field(default_factory=list)  # (instance seed, group seed)
    drafts: list[int] = field(default_factory=lambda: [0, 0])
    copied_reads: int = 0

    def play_group(self, instance: Instance, n: int, seed: int) -> list[Rollout]:
        self.played.append((instance.seed, seed))
        wins = self.outcomes[instance.seed]
        assert len(wins) == n
        return [
            Rollout(
                prompt_ids=[instance.seed % 1000],
                completion_ids=[k],
                env_mask=[1],
                logprobs=[0.0],
                reward=1.0 if won else 0.0,
                success=won,
                end_reason="answered",
                turns=1,
                record=failed_record(
                    instance, k, "scripted", "answered", "", time.time(), time.perf_counter()
                ),
            )
            for k, won in enumerate(wins)
        ]


class Trainer:
    class state:  # TRL's attribute name
        global_step = 3


def one_step(
    resample_flat: int,
    outcomes: dict[int, list[bool]],
    log_dir: Path | None = None,
    streams: RolloutStreams | None = None,
) -> tuple[ScriptedRoller, dict[str, list[object]]]:
    spec = get_task("guess")
    instance = spec.instance(7, "easy")
    (row,) = rl_rows([instance])
    roller = ScriptedRoller(GRPOOptions(resample_flat=resample_flat), outcomes)
    by_prompt = {prompt_key(row["prompt"]): [instance]}
    func = make_rollout_func(roller, by_prompt, log_dir, streams)  # type: ignore[arg-type]
    return roller, func([row["prompt"]] * GROUP, Trainer())


MIXED = [True, False, False, True]


def test_a_group_with_mixed_outcomes_trains_as_played() -> None:
    roller, out = one_step(2, {7: MIXED})
    assert [seed for seed, _ in roller.played] == [7]
    assert out["env_success"] == MIXED


def test_a_flat_group_is_replaced_by_one_on_a_fresh_instance_of_its_task(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = 200_000  # GRPOOptions.resample_first_seed
    outcomes = {7: [True] * GROUP, first: [False] * GROUP, first + 1: MIXED}
    roller, out = one_step(2, outcomes)
    assert [seed for seed, _ in roller.played] == [7, first, first + 1]
    assert len({group_seed for _, group_seed in roller.played}) == 3  # fresh samples each time
    assert out["env_success"] == MIXED
    assert out["prompt_ids"] == [[(first + 1) % 1000]] * GROUP  # the replacement's own prompt
    err = capsys.readouterr().err
    assert (
        "flat groups replaced: guess-v1 seed 7 all solved; guess-v1 seed 200000 all unsolved" in err
    )


def test_resampling_stops_after_its_budget_and_trains_the_last_group() -> None:
    outcomes = {7: [False] * GROUP, 200_000: [True] * GROUP}
    roller, out = one_step(1, outcomes)
    assert [seed for seed, _ in roller.played] == [7, 200_000]
    assert out["env_success"] == [True] * GROUP


def test_without_resampling_a_flat_group_trains() -> None:
    roller, out = one_step(0, {7: [False] * GROUP})
    assert len(roller.played) == 1 and out["env_success"] == [False] * GROUP


def test_the_rollouts_log_keeps_set_aside_groups_under_their_own_agent(tmp_path: Path) -> None:
    from agentharness.store.run import RunDir

    log = tmp_path / "rollouts"
    RunDir(log).create({"command": "test"})
    one_step(1, {7: [True] * GROUP, 200_000: MIXED}, log)
    records = load_runs([log]).records
    by_agent = {
        a: sorted(r.seed for r in records if r.agent == a) for a in {r.agent for r in records}
    }
    assert by_agent == {"grpo:flat:step3": [7] * GROUP, "grpo:step3": [200_000] * GROUP}
    assert len({r.episode_id for r in records}) == 2 * GROUP


def test_a_negative_resample_budget_is_refused(tmp_path: Path) -> None:
    from agentharness.train import TrainInputError
    from agentharness.train.grpo import train_grpo

    with pytest.raises(TrainInputError, match="resample_flat is -1"):
        train_grpo(["guess"], tmp_path / "out", model="/nonexistent", resample_flat=-1)


def test_a_resumed_run_draws_the_fresh_instances_after_those_its_checkpoint_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The streams saved with a checkpoint and read back: the next flat group is replaced
    by seed 200002, not by 200000 again (a run before the checkpoint drew 200000 and 200001)."""
    first = 200_000
    flat, unsolved = [True] * GROUP, [False] * GROUP
    streams = RolloutStreams()
    one_step(2, {7: flat, first: unsolved, first + 1: MIXED}, streams=streams)
    assert streams.fresh == {"guess-v1": 2} and list(streams.cursor.values()) == [1]
    streams.save(tmp_path / "checkpoint-1")

    resumed = RolloutStreams.load(tmp_path / "checkpoint-1")
    assert resumed == streams
    assert (
        "resuming the instance streams of checkpoint-1: 1 groups played, "
        "fresh instances drawn: guess-v1 2" in capsys.readouterr().err
    )
    roller, out = one_step(1, {7: flat, first + 2: MIXED}, streams=resumed)
    assert out["env_success"] == MIXED
    assert [seed for seed, _ in roller.played] == [7, first + 2]
    assert resumed.fresh == {"guess-v1": 3} and list(resumed.cursor.values()) == [2]


def test_a_checkpoint_without_streams_starts_them_again_and_a_broken_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentharness.train import TrainInputError

    assert RolloutStreams.load(tmp_path) == RolloutStreams()
    assert "instance streams start again" in capsys.readouterr().err
    (tmp_path / RolloutStreams.FILE).write_text('{"cursor": [1]}')
    with pytest.raises(TrainInputError, match="delete it to resume"):
        RolloutStreams.load(tmp_path)


class RecordingPasses:
    """Stands in for ``PromptPasses``: what the rollout function asks of it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def compute(self, prompt_ids: list[int]) -> None:
        self.calls.append(("compute", prompt_ids))

    def drop(self, prompt_ids: list[int]) -> None:
        self.calls.append(("drop", prompt_ids))

    def clear(self) -> None:
        self.calls.append(("clear", None))


def test_the_prompt_passes_of_set_aside_groups_are_dropped() -> None:
    """A batch's rollouts first free the prompt forwards no training pass took, hand the
    roller the trainer's ``compute``, and drop the forward of each group set aside."""
    first = 200_000
    outcomes = {7: [True] * GROUP, first: [False] * GROUP, first + 1: MIXED}
    instance = get_task("guess").instance(7, "easy")
    (row,) = rl_rows([instance])
    roller = ScriptedRoller(GRPOOptions(resample_flat=2), outcomes)
    trainer = Trainer()
    passes = RecordingPasses()
    trainer.prompt_passes = passes  # type: ignore[attr-defined]
    func = make_rollout_func(roller, {prompt_key(row["prompt"]): [instance]})  # type: ignore[arg-type]
    out = func([row["prompt"]] * GROUP, trainer)
    assert out["env_success"] == MIXED
    assert roller.prompt_pass == passes.compute  # type: ignore[attr-defined]
    assert passes.calls == [("clear", None), ("drop", [7]), ("drop", [first % 1000])]
