"""Expert corrections (DAgger over logs): rows in the policy's states, the expert's turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loop_helpers import make_run, records_of
from typer.testing import CliRunner

from agentharness.cli.main import app
from agentharness.core.registry import episode_for, get_task
from agentharness.export.sft import sft_rows
from agentharness.loop.checks import LoopInputError
from agentharness.loop.correct import correction_rows
from agentharness.store import RunDir
from agentharness.train.sft import sft_chats


@pytest.fixture(scope="module")
def random_escapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random play on escape_room: never escapes, wanders into locked doors, wastes actions."""
    path = tmp_path_factory.mktemp("random_escape_room")
    make_run(path, "random", "escape_room", n=3, difficulty="easy")
    return path


def test_rows_put_the_experts_turn_after_the_policys_own_conversation(
    random_escapes: Path,
) -> None:
    records = records_of(random_escapes)
    assert not any(r.reward.success for r in records)
    rows, report = correction_rows(records)
    assert rows and report.corrected == 3 and report.rows == len(rows)
    assert report.rows_by_task == {"escape_room-v1": len(rows)}
    by_id = {r.episode_id: r for r in records}
    for row in rows:
        policy = by_id[row["corrects"]]
        # the prompt is the policy's own conversation before that turn, as export shows it
        (own,) = [
            r for r in sft_rows([policy], per_turn=True, tool_format="text")
            if r["turn"] == row["turn"]
        ]  # fmt: skip
        assert row["prompt"] == own["prompt"]
        assert row["policy"] == "random" and row["policy_reward"] == policy.reward.total
        # ... and from there the expert's turn, then the expert on to the end, escapes
        episode = episode_for(policy.instance)
        for message in [m for m in policy.messages if m.role == "assistant"][: row["turn"] - 1]:
            episode.step(message)
        (turn,) = row["completion"]
        assert turn["role"] == "assistant" and "<tool_call>" in turn["content"]
        expert = get_task(policy.task).require_expert()(policy.instance)
        while not episode.done:
            episode.step(expert.next_turn(list(episode.messages)))
        assert episode.reward().success
        episode.close()


def test_a_row_trains_on_the_experts_turn_only(random_escapes: Path) -> None:
    rows, _ = correction_rows(records_of(random_escapes))
    for row, (chat, train_from) in zip(rows, sft_chats(rows), strict=True):
        assert train_from == len(chat) - 1 and chat[-1]["role"] == "assistant"
        assert len(chat) - 1 >= len(row["prompt"])  # the tool schemas may join the system turn


def test_turns_too_late_for_the_expert_to_escape_are_left_out(random_escapes: Path) -> None:
    """Random play spends the whole action budget: near its end even the expert cannot
    escape, and those turns are dropped, never labelled with a move that loses."""
    records = records_of(random_escapes)
    _, report = correction_rows(records)
    turns = sum(m.role == "assistant" for r in records for m in r.messages)
    assert report.dropped["expert_unsolved"] > 0
    assert report.rows + report.dropped["expert_unsolved"] == turns
    assert "expert_unsolved" in report.line()


def test_solved_episodes_are_not_corrected(tmp_path: Path) -> None:
    records = records_of(make_run(tmp_path / "expert", "expert", "escape_room", n=2))
    rows, report = correction_rows(records)
    assert rows == [] and report.corrected == 0 and report.episodes == 2


def test_a_log_that_does_not_replay_is_dropped(random_escapes: Path) -> None:
    """A log whose tool replies the task does not give again (another task version's
    world, an edited file) labels nothing rather than rows for states that never were."""
    record = records_of(random_escapes)[0]
    messages = list(record.messages)
    i = next(i for i, m in enumerate(messages) if m.role == "tool")
    messages[i] = messages[i].model_copy(update={"content": "You see a door that is not there."})
    rows, report = correction_rows([record.model_copy(update={"messages": messages})])
    assert rows == [] and report.dropped["not_replayable"] == 1


def test_disagreeing_rows_and_a_cap_per_episode(random_escapes: Path) -> None:
    """Turns the policy played as the expert would are left out on request; a cap keeps each
    episode's first rows (the first is where a looping policy went wrong)."""
    records = records_of(random_escapes)
    every, report = correction_rows(records)
    differing, narrowed = correction_rows(records, only_disagreeing=True)
    assert [r for r in every if not r["expert_agrees"]] == differing
    assert narrowed.dropped["agrees"] == report.agreed and narrowed.agreed == 0
    first, capped = correction_rows(records, only_disagreeing=True, max_per_episode=2)
    for episode_id in {r["corrects"] for r in differing}:
        mine = [r for r in differing if r["corrects"] == episode_id]
        assert [r for r in first if r["corrects"] == episode_id] == mine[:2]
    assert capped.rows == len(first) < len(differing)


def test_a_log_of_a_retired_task_version_is_counted_not_a_crash(random_escapes: Path) -> None:
    record = records_of(random_escapes)[0]
    retired = record.model_copy(update={"task": "escape_room-v0"})
    rows, report = correction_rows([retired, *records_of(random_escapes)[1:]])
    assert report.dropped["unknown_task"] == 1 and rows
    assert {r["corrects"] for r in rows} <= {r.episode_id for r in records_of(random_escapes)[1:]}


def test_an_unknown_tool_format_or_a_cap_below_one_is_an_error() -> None:
    with pytest.raises(LoopInputError, match="tool format must be one of"):
        correction_rows([], tool_format="xml")  # type: ignore[arg-type]
    with pytest.raises(LoopInputError, match="max_per_episode must be at least 1"):
        correction_rows([], max_per_episode=0)


def test_cli_writes_the_rows_and_says_what_it_dropped(random_escapes: Path, tmp_path: Path) -> None:
    out = tmp_path / "corrections.jsonl"
    result = CliRunner().invoke(
        app, ["correct", str(random_escapes), "-o", str(out)], env={"COLUMNS": "240"}
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert f"{len(rows)} correction rows (escape_room-v1 {len(rows)})" in result.output
    assert "expert_unsolved" in result.output

    as_json = CliRunner().invoke(app, ["correct", str(random_escapes), "-o", str(out), "--json"])
    assert json.loads(as_json.stdout)["rows"] == len(rows)

    clash = CliRunner().invoke(app, ["correct", str(random_escapes), "-o", str(random_escapes)])
    assert clash.exit_code != 0 and "is one of the input runs" in clash.output
    assert len(list(RunDir(random_escapes).episodes())) == 3  # the run is untouched
