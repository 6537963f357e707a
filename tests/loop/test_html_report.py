from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
from pathlib import Path

import pytest

from agentharness.agents import make_agent
from agentharness.core.registry import get_task, resolve_tasks
from agentharness.loop.compare import compare
from agentharness.loop.html_report import collect, write_html_report
from agentharness.loop.mine import mine
from agentharness.rollout.runner import plan, run
from agentharness.store.reader import load_runs
from agentharness.store.run import RunDir, RunDirError

IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def new_run(path: Path, agent: str, tasks: str = "thermal,escape_room", n: int = 3) -> Path:
    items = plan(resolve_tasks(tasks), n=n, k=1, difficulty="easy")
    run_dir = RunDir(path)
    run_dir.create({"command": "test"})
    asyncio.run(run(items, make_agent(agent), run_dir, concurrency=4))
    return path


@pytest.fixture(scope="module")
def loop_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """round_1 (before/after, mine.json, compare.json) and round_2 (after only)."""
    root = tmp_path_factory.mktemp("loop")
    new_run(root / "round_1" / "heldout_before", "random")
    new_run(root / "round_1" / "heldout_after", "expert")
    new_run(root / "round_2" / "heldout_after", "noisy:0.3")
    before = load_runs([root / "round_1" / "heldout_before"]).records
    after = load_runs([root / "round_1" / "heldout_after"]).records
    mined = mine(before, runs=["round_1/heldout_before"])
    assert mined.clusters
    (root / "round_1" / "mine.json").write_text(mined.model_dump_json())
    compared = compare(before, after, run_a="before", run_b="after", n_boot=200)
    (root / "round_1" / "compare.json").write_text(compared.model_dump_json())
    return root


def images(page: str) -> list[bytes]:
    return [base64.b64decode(b) for b in IMG.findall(page)]


def test_run_report_has_plots_and_a_section_per_task(tmp_path: Path) -> None:
    run_dir = new_run(tmp_path / "run", "noisy:0.5")
    out = write_html_report(run_dir, tmp_path / "sub" / "report.html")
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    pngs = images(page)
    assert len(pngs) >= 5 and all(p.startswith(b"\x89PNG\r\n\x1a\n") for p in pngs)
    for task in (get_task("thermal").id, get_task("escape_room").id):
        assert f'<section id="task-{task}"><h2>Task {task}</h2>' in page
        assert f"reward distribution of {task}" in page and f"{task}: end reasons" in page
    assert 'id="failures"' in page and "before-after" not in page
    # The same run gives the same page.
    assert write_html_report(run_dir, tmp_path / "again.html").read_text() == page


def test_loop_report_shows_mined_clusters_and_before_after(loop_dir: Path, tmp_path: Path) -> None:
    page = write_html_report(loop_dir, tmp_path / "loop.html").read_text()
    assert page.count('<section id="task-') == 2
    assert "round_1/heldout_before" in page and "round_2/heldout_after" in page
    data = collect(loop_dir)
    ((src, mined),) = data.mined
    assert src == "round_1/mine.json" and mined.clusters
    assert "<h3>round_1/mine.json</h3>" in page and mined.clusters[0].end_reason in page
    assert "Failure clusters (mine.json)" in page
    assert 'id="before-after"' in page
    assert "before/after of round_1" in page and "before/after of round_2" in page
    # round 2 starts from round 1's trained student
    assert "before: round_1/heldout_after; after: round_2/heldout_after" in page
    compared = data.rounds[0].compare
    assert compared is not None and compared.overall is not None
    lo, hi = compared.overall.reward.ci or (0.0, 0.0)
    assert "<h4>compare.json</h4>" in page and f"[{lo:+.3f}, {hi:+.3f}]" in page
    assert compared.overall.verdict in page
    assert [r.name for r in data.rounds] == ["round_1", "round_2"]


def test_a_report_json_that_is_not_one_is_noted_and_left_out(
    loop_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "loop"
    shutil.copytree(loop_dir, copy)
    (copy / "round_1" / "mine.json").write_text('{"clusters": [{"task": "x"}]}')
    (copy / "round_1" / "compare.json").write_text('{"note": "nothing to compare"}')
    data = collect(copy)
    assert data.mined == [] and data.rounds[0].compare is None
    assert any("mine.json: left out (not a MineReport)" in n for n in data.notes)
    assert any("compare.json: left out (not a CompareReport)" in n for n in data.notes)


def test_without_mine_json_failures_are_grouped_by_end_reason(
    loop_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "loop"
    shutil.copytree(loop_dir, copy)
    (copy / "round_1" / "mine.json").unlink()
    page = write_html_report(copy, tmp_path / "r.html").read_text()
    assert "No mine.json found" in page and "largest failure groups" in page
    assert "Failures by end reason and difficulty" in page


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="does not exist"):
        write_html_report(tmp_path / "nope", tmp_path / "r.html")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="no run directory"):
        write_html_report(tmp_path / "empty", tmp_path / "r.html")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(RunDirError, match="not a directory"):
        write_html_report(tmp_path / "f.txt", tmp_path / "r.html")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "episodes.jsonl").write_text("not json\n")
    with pytest.raises(RunDirError, match="no readable episodes"):
        write_html_report(foreign, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_truncated_lines_and_mixed_versions_are_noted(tmp_path: Path) -> None:
    run_dir = new_run(tmp_path / "run", "expert", "thermal", n=2)
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    d = json.loads(lines[0])
    old = get_task("thermal").id
    new = f"thermal-v{get_task('thermal').version + 1}"
    d["task"] = d["instance"]["task"] = new
    d["episode_id"] = d["episode_id"].replace(old, new)  # the same id would count once
    text = "\n".join([*lines, json.dumps(d)]) + "\n" + '{"episode_id": "cut'
    (run_dir / "episodes.jsonl").write_text(text)
    page = write_html_report(run_dir, tmp_path / "r.html").read_text()
    assert "truncated line" in page
    assert f"task thermal appears under several versions ({old}, {new})" in page
    assert f'id="task-{old}"' in page and f'id="task-{new}"' in page
