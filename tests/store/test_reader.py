"""The one reader of runs (store.load_runs) and of instances files (store.read_instances)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentharness import get_task
from agentharness.agents import make_agent
from agentharness.loop.checks import mixed_versions
from agentharness.rollout.runner import plan, run
from agentharness.store import (
    CorruptLineWarning,
    RunDir,
    RunDirError,
    load_runs,
    named_run_dirs,
    read_instances,
    write_instances,
)


@pytest.fixture(scope="module")
def guess_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    path = tmp_path_factory.mktemp("guess_run")
    run_dir = RunDir(path)
    run_dir.create({"command": "test"})
    asyncio.run(run(plan([get_task("guess")], n=4, k=1), make_agent("noisy:0.5"), run_dir))
    return path


def test_the_same_run_twice_counts_each_episode_once(guess_run: Path) -> None:
    loaded = load_runs([guess_run, guess_run])
    assert len(loaded.records) == 4 and loaded.duplicates == 4
    assert "more than once" in loaded.warnings[-1]
    assert mixed_versions(loaded.records) is None


def test_empty_and_unreadable_runs(tmp_path: Path) -> None:
    empty = RunDir(tmp_path / "empty")
    empty.write_all([], {"command": "filter"})
    with pytest.raises(RunDirError, match="has no episodes yet"):
        load_runs([empty.path])
    assert load_runs([empty.path], allow_empty=True).records == []
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "episodes.jsonl").write_text('{"not": "an episode"}\nnot json\n')
    with pytest.raises(RunDirError, match=r"none of the lines .* \(2 skipped"):
        load_runs([garbage])
    assert load_runs([garbage], allow_empty=True).skipped == 2
    with pytest.raises(RunDirError, match="no run directories"):
        load_runs([])
    with pytest.raises(RunDirError, match="does not exist"):
        load_runs([tmp_path / "nope"])
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(RunDirError, match="not a run directory"):
        load_runs([tmp_path / "empty_dir"])


def test_skipped_lines_are_collected_and_said_on_demand(guess_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(guess_run, copy)
    with open(copy / "episodes.jsonl", "a") as f:
        f.write('{"episode_id": "cut-off')
    loaded = load_runs([copy])
    assert len(loaded.records) == 4 and loaded.skipped == 1
    assert "truncated" in loaded.warnings[0]
    with pytest.warns(CorruptLineWarning, match="truncated"):
        loaded.emit_warnings()


def test_runs_are_found_and_named_as_reports_and_the_viewer_name_them(
    guess_run: Path, tmp_path: Path
) -> None:
    loop = tmp_path / "loop"
    for rel in ("round_1/heldout_before", "round_1/heldout_after"):
        shutil.copytree(guess_run, loop / rel)
    assert named_run_dirs([guess_run]) == [(guess_run.resolve().name, guess_run)]
    assert [n for n, _ in named_run_dirs([loop])] == [
        "round_1/heldout_after",
        "round_1/heldout_before",
    ]
    assert [n for n, _ in named_run_dirs([guess_run, guess_run])][1].endswith("#2")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(RunDirError, match="holds no run directory"):
        named_run_dirs([tmp_path / "nothing"])
    with pytest.raises(RunDirError, match="is not a directory"):
        named_run_dirs([guess_run / "episodes.jsonl"])


def test_instances_files_and_rl_rows_read_the_same(tmp_path: Path) -> None:
    instances = [get_task("guess").instance(s, "medium") for s in range(3)]
    plain = tmp_path / "instances.jsonl"
    write_instances(plain, instances)
    rows = tmp_path / "rl.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"prompt": [], "instance": i.model_dump_json()}) + "\n" for i in instances
        )
        + json.dumps({"instance": instances[0].model_dump(mode="json")})
        + "\n\n"
    )
    assert read_instances(plain) == instances
    assert read_instances(rows) == [*instances, instances[0]]


def test_bad_instances_files(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="does not exist"):
        read_instances(tmp_path / "missing.jsonl")
    with pytest.raises(RunDirError, match="is a directory; pass an instances file in it"):
        read_instances(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n')
    with (
        pytest.warns(CorruptLineWarning, match="neither an RL row"),
        pytest.raises(RunDirError, match=r"holds no readable instances \(.*neither an RL row"),
    ):
        read_instances(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(RunDirError, match="holds no readable instances"):
        read_instances(empty)
    assert read_instances(empty, allow_empty=True) == []
    unknown = tmp_path / "unknown.jsonl"
    inst = get_task("guess").instance(0, "medium")
    unknown.write_text(inst.model_copy(update={"task": "nosuchtask-v1"}).model_dump_json() + "\n")
    with pytest.raises(RunDirError, match="unknown task 'nosuchtask-v1'"):
        read_instances(unknown)
    assert read_instances(unknown, check_tasks=False)[0].task == "nosuchtask-v1"
