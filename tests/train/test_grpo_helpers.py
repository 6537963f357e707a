"""Small helpers of the GRPO trainer that need no model."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentharness.core.registry import get_task
from agentharness.train import TrainInputError
from agentharness.train.grpo import (
    EpisodeRoller,
    GRPOOptions,
    _matches,
    _training_rows,
    train_grpo,
)


def test_task_filter_takes_versioned_ids_and_bare_names() -> None:
    assert _matches("escape_room-v1", ["escape_room"])
    assert _matches("escape_room-v1", ["escape_room-v1"])
    assert not _matches("escape_room-v1", ["escape_room-v2"])
    # a name containing "-v" is not cut there
    assert _matches("my-vault-v3", ["my-vault"])
    assert not _matches("my-vault-v3", ["my"])


def test_an_instance_no_episode_can_start_on_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad line is one warning before training, not a crash some steps into it."""
    spec = get_task("guess")
    good = [spec.instance(seed, "easy").model_dump(mode="json") for seed in range(3)]
    broken = {**good[1], "public": {}}  # data the task cannot read
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in (good[0], broken, good[2])))

    rows = _training_rows([], None, path, GRPOOptions())
    assert sorted(json.loads(row["instance"])["seed"] for row in rows) == [0, 2]
    (warning,) = capsys.readouterr().err.strip().splitlines()
    assert "skipped instance guess-v1:1:" in warning and "KeyError" in warning

    path.write_text(json.dumps(broken) + "\n")
    with pytest.raises(TrainInputError, match=r"no instance .* can start an episode"):
        train_grpo([], tmp_path / "out", model="/nonexistent", data=path)


def test_sampled_tokens_follow_the_sampling_distribution() -> None:
    """Temperature and top-p applied; frequencies match; a token without mass never comes."""
    import torch

    from agentharness.train.sampling import sample_token

    logits = torch.tensor([0.0, 1.0, 2.0, -1e9, 0.5, 1.5])
    generator = torch.Generator().manual_seed(0)
    n = 20_000
    for temperature, top_p in ((1.0, 1.0), (0.7, 1.0), (1.0, 0.8)):
        want = torch.log_softmax(logits / temperature, -1)
        if top_p < 1.0:  # the smallest set of most likely tokens reaching top_p: 2, 5, 1
            want = torch.log_softmax(
                want.masked_fill(torch.tensor([1, 0, 0, 1, 1, 0]).bool(), -1e9), -1
            )
        counts = torch.zeros(6)
        for _ in range(n):
            token, logp = sample_token(logits, temperature, top_p, generator)
            counts[token] += 1
            assert abs(logp - float(want[token])) < 1e-5
        freq = counts / n
        assert counts[3] == 0 and (top_p == 1.0 or counts[[0, 4]].sum() == 0)
        # 4 standard errors of a frequency of n draws
        assert torch.all(
            (freq - want.exp()).abs() <= 4 * (want.exp() * (1 - want.exp()) / n).sqrt() + 1e-9
        )
    a = [sample_token(logits, 1.0, 1.0, torch.Generator().manual_seed(5))[0] for _ in range(3)]
    assert len(set(a)) == 1  # the same generator state gives the same token
    assert sample_token(logits, 0.0, 1.0, generator)[0] == 2  # greedy


def test_a_task_plays_its_own_budget_and_others_the_default() -> None:
    """``task_budgets`` by versioned id or bare name; the id's entry wins over the name's."""
    opts = GRPOOptions(
        max_turns=5,
        max_new_tokens=192,
        task_budgets={"robot_reach-v7": (8, 160), "harmony": (5, 96), "robot_reach": (2, 2)},
    )
    assert opts.budget_of("robot_reach-v7") == (8, 160)
    assert opts.budget_of("robot_reach-v6") == (2, 2)
    assert opts.budget_of("harmony-v5") == (5, 96)
    assert opts.budget_of("thermal-v6") == (5, 192)


def test_an_episode_plays_the_budgets_its_task_gives_its_instance() -> None:
    """The task's budgets for the instance (harmony's grow with the altered notes), capped by
    the turns GRPO plays the task under."""
    spec = get_task("harmony")
    eight = spec.instance(0, "hard", n_errors=8, n_chords=16)
    # only budgets() runs: a stand-in with the options, no model
    roller: Any = SimpleNamespace(opts=GRPOOptions(max_turns=40, max_new_tokens=96))
    assert EpisodeRoller.budgets(roller, eight) == spec.interaction.budgets_for(eight)
    assert EpisodeRoller.budgets(roller, eight).max_turns == 22
    assert EpisodeRoller.budgets(roller, spec.instance(0, "hard")).max_turns == 16
    roller.opts = GRPOOptions(max_turns=5, max_new_tokens=96)
    assert EpisodeRoller.budgets(roller, eight).max_turns == 5


@pytest.mark.parametrize(
    ("budgets", "message"),
    [
        ({"guess-v9": (3, 10)}, r"budget is given for guess-v9, but the problems play guess-v1"),
        ({"guess": (0, 10)}, r"0 turns of 10 tokens; both must be >= 1"),
    ],
)
def test_a_budget_for_another_version_or_not_positive_stops_before_training(
    tmp_path: Path, budgets: dict[str, tuple[int, int]], message: str
) -> None:
    """A stale version in a budget would leave that task on the default budget unnoticed."""
    instances = [get_task("guess").instance(0, "easy")]
    with pytest.raises(TrainInputError, match=message):
        train_grpo(
            [], tmp_path / "out", model="/nonexistent", instances=instances, task_budgets=budgets
        )
    assert not (tmp_path / "out").exists()


def test_a_budget_for_a_task_no_problem_plays_is_a_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A curriculum may leave a task out (v33's probe kept no harmony instance)."""
    from agentharness.train.grpo import _check_task_budgets

    _check_task_budgets({"thermal": (3, 10), "guess": (2, 5)}, {"guess-v1"})
    assert "budget is given for thermal, which no training problem plays" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("robot_reach-v7", "write TASK=TURNS or TASK=TURNS:TOKENS"),
        ("robot_reach-v7=8:x", "write TASK=TURNS or TASK=TURNS:TOKENS"),
        ("robot_reach-v7=-1", "positive whole numbers"),
        ("robotreach=8", "robotreach"),
    ],
)
def test_the_cli_names_a_malformed_task_budget(value: str, message: str) -> None:
    from typer.testing import CliRunner

    from agentharness.cli.main import app

    result = CliRunner().invoke(
        app,
        ["train", "grpo", "--tasks", "guess", "--out", "/nonexistent/o", "--task-budget", value],
        env={"COLUMNS": "240"},
    )
    assert result.exit_code == 2, result.output
    assert message in result.output and value in result.output


def test_the_success_signal_is_flat_over_unsolved_episodes_that_differ_in_total() -> None:
    """Partial credit moves "total" advantages between failures; "success" does not."""
    from agentharness.train import REWARD_SIGNALS
    from agentharness.train.grpo import REWARD_FUNCS

    env = {"env_reward": [0.0, 0.31, 0.95, 0.12], "env_success": [False, False, True, False]}
    assert REWARD_FUNCS["total"]([None] * 4, **env) == [0.0, 0.31, 0.95, 0.12]
    assert REWARD_FUNCS["success"]([None] * 4, **env) == [0.0, 0.0, 1.0, 0.0]
    assert set(REWARD_FUNCS) == set(REWARD_SIGNALS)  # every signal the CLI offers trains


def test_an_unknown_reward_signal_stops_before_training(tmp_path: Path) -> None:
    instances = [get_task("guess").instance(0, "easy")]
    with pytest.raises(
        TrainInputError, match="reward_signal 'solved': choose one of total, success"
    ):
        train_grpo(
            [], tmp_path / "out", model="/nonexistent", instances=instances, reward_signal="solved"
        )
    assert not (tmp_path / "out").exists()

    from typer.testing import CliRunner

    from agentharness.cli.main import app

    result = CliRunner().invoke(
        app,
        [
            "train",
            "grpo",
            "--tasks",
            "guess",
            "--out",
            "/nonexistent/o",
            "--reward-signal",
            "solved",
        ],
        env={"COLUMNS": "240"},
    )
    assert result.exit_code == 2, result.output
    assert "--reward-signal 'solved': choose total, success" in result.output
