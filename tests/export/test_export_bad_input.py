from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentharness.core.registry import get_task
from agentharness.export.common import ExportError
from agentharness.export.rl import export_groups, export_rl
from agentharness.export.sft import export_sft
from agentharness.store.reader import load_runs
from agentharness.store.run import CorruptLineWarning, RunDir, RunDirError

EXPORTS = [
    lambda runs, out: export_sft(runs, out / "sft.jsonl"),
    lambda runs, out: export_rl(runs, out / "rl.parquet"),
    lambda runs, out: export_groups(runs, out / "groups.jsonl"),
]


@pytest.mark.parametrize("export", EXPORTS)
def test_missing_and_foreign_run_dirs(export, text_run: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RunDirError, match="does not exist"):
        export([tmp_path / "nope"], tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RunDirError, match="not a run directory"):
        export([empty], tmp_path)
    a_file = tmp_path / "file.txt"
    a_file.write_text("hi")
    with pytest.raises(RunDirError, match="not a directory"):
        export([a_file], tmp_path)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "episodes.jsonl").write_text('{"hello": "world"}\n')
    with pytest.raises(RunDirError, match=r"none of the lines .* is an episode record"):
        export([foreign], tmp_path)
    (empty / "episodes.jsonl").touch()
    with pytest.raises(RunDirError, match="has no episodes yet"):
        export([empty], tmp_path)
    with pytest.raises((RunDirError, ExportError), match=r"no run directories|not neither"):
        export([], tmp_path)


def test_truncated_last_line_is_skipped_with_a_warning(text_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(text_run, run)
    good = len(list(RunDir(run).episodes()))
    with open(run / "episodes.jsonl", "a") as f:
        f.write('{"schema_version": 1, "episode_id": "cut-off-mid-wr')
    with pytest.warns(CorruptLineWarning, match="truncated"):
        assert export_sft([run], tmp_path / "sft.jsonl") == good
    loaded = load_runs([run])
    assert len(loaded.records) == good and loaded.skipped == 1


def test_a_run_named_twice_is_exported_once(text_run: Path, tmp_path: Path) -> None:
    once = export_sft([text_run], tmp_path / "once.jsonl")
    assert export_sft([text_run, text_run], tmp_path / "twice.jsonl") == once


def test_mixed_task_versions_are_refused_then_allowed(text_run: Path, tmp_path: Path) -> None:
    old = get_task("thermal").id
    new = f"thermal-v{get_task('thermal').version + 1}"
    v2 = tmp_path / "v2"
    shutil.copytree(text_run, v2)
    lines = []
    for line in (v2 / "episodes.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["task"] == old:
            d["task"] = d["instance"]["task"] = new
            d["episode_id"] = d["episode_id"].replace(old, new)
        lines.append(json.dumps(d))
    (v2 / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    for export in (
        lambda **kw: export_sft([text_run, v2], tmp_path / "s.jsonl", **kw),
        lambda **kw: export_groups([text_run, v2], tmp_path / "g.jsonl", **kw),
    ):
        with pytest.raises(ExportError, match=rf"mix versions of a task \(thermal: {old}, {new}\)"):
            export()
        with pytest.warns(UserWarning, match="keeps its versioned task id"):
            export(allow_mixed_versions=True)
    tasks = {json.loads(line)["task"] for line in (tmp_path / "s.jsonl").read_text().splitlines()}
    assert {old, new} <= tasks


def test_an_export_that_fails_midway_leaves_the_earlier_file(tmp_path: Path) -> None:
    from agentharness.export.common import write_jsonl

    out = tmp_path / "sft.jsonl"
    assert write_jsonl([{"a": 1}, {"b": 2}], out) == 2

    def rows():  # type: ignore[no-untyped-def]
        yield {"c": 3}
        raise ExportError("a record that cannot be converted")

    with pytest.raises(ExportError):
        write_jsonl(rows(), out)
    assert out.read_text().splitlines() == ['{"a":1}', '{"b":2}']
    assert [p.name for p in tmp_path.iterdir()] == ["sft.jsonl"]  # no temporary file left


def test_an_export_to_a_stream_writes_through_it(tmp_path: Path) -> None:
    """``-o /dev/stdout`` (here a link to /dev/null): no temporary file is renamed over it."""
    from agentharness.export.common import write_jsonl

    out = tmp_path / "stdout"
    out.symlink_to("/dev/null")
    assert write_jsonl([{"a": 1}], out) == 1
    assert out.is_symlink() and [p.name for p in tmp_path.iterdir()] == ["stdout"]
