"""The viewer's routes without a browser: index, filters, sorting, pages, safety, bad input."""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from agentharness import get_task
from agentharness.store import RunDir
from agentharness.store.run import RunDirError
from agentharness.view import ViewerApp, open_runs
from agentharness.view.pages import message_kinds

GUESS, TSP = get_task("guess").id, get_task("tsp_vision").id


@pytest.fixture(scope="module")
def app(view_runs: Path) -> ViewerApp:
    return ViewerApp.from_paths([view_runs])


def get(app: ViewerApp, path: str, **params: object) -> tuple[int, str]:
    r = app.handle(path + ("?" + urlencode(params) if params else ""))
    return r.status, r.body.decode("utf-8", errors="replace")


def api(app: ViewerApp, **params: object) -> dict:
    status, body = get(app, "/api/episodes", **params)
    assert status == 200, body
    return json.loads(body)


def test_runs_are_named_like_the_html_report(app: ViewerApp) -> None:
    assert sorted(app.runs) == ["after", "before"]
    before = app.runs["before"].rows()
    assert len(before) == 32 and len(app.runs["after"].rows()) == 30
    assert {r.task for r in before} == {GUESS, TSP}


def test_filters_select_only_matching_episodes(app: ViewerApp) -> None:
    everything = api(app, per=200)
    assert everything["total"] == 62
    only = api(app, run="before", task=GUESS, success="no", per=200)
    assert only["total"] > 0
    assert all(
        e["run"] == "before" and e["task"] == GUESS and not e["success"] for e in only["episodes"]
    )
    high = api(app, min_reward=0.975, per=200)["episodes"]
    low = api(app, max_reward=0.975, per=200)["episodes"]
    assert high and low and len(high) + len(low) == 62
    assert all(e["reward"] >= 0.975 for e in high) and all(e["reward"] <= 0.975 for e in low)
    assert api(app, end_reason="answered", agent="handmade")["total"] == 1
    assert api(app, q="tsp_vision")["total"] == 1


def test_sorting_and_pagination_cover_every_episode_once(app: ViewerApp) -> None:
    desc = api(app, sort="reward", desc=1, per=25)
    assert desc["pages"] == 3
    rewards = [e["reward"] for e in desc["episodes"]]
    assert rewards == sorted(rewards, reverse=True)
    seen = []
    for page in (1, 2, 3):
        seen += [
            (e["run"], e["episode_id"])
            for e in api(app, sort="turns", per=25, page=page)["episodes"]
        ]
    assert len(seen) == len(set(seen)) == 62
    assert api(app, page=99, per=25)["page"] == 3  # past the end: the last page


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min_reward": "lots"}, "min_reward must be a number"),
        ({"per": "7"}, "per must be one of"),
        ({"page": "0"}, "page must be at least 1"),
        ({"sort": "secret"}, "cannot sort by"),
        ({"success": "maybe"}, "success must be yes or no"),
        ({"run": "nope"}, "no run named"),
    ],
)
def test_bad_queries_get_a_clear_error(app: ViewerApp, params: dict, message: str) -> None:
    status, body = get(app, "/", **params)
    assert status in (400, 404) and message in body


def test_episode_page_shows_the_whole_transcript(app: ViewerApp) -> None:
    (row,) = [r for r in app.all_rows() if r.agent == "handmade"]
    status, body = get(app, "/episode", run="before", id=row.episode_id)
    assert status == 200
    for kind in ("system", "prompt", "assistant", "tool", "format-error", "nudge", "tool-images"):
        assert f'data-kind="{kind}"' in body, kind
    assert "tool error" in body and "guess must be &gt;= 1" in body
    assert "I give up; answering 1." in body  # assistant text
    assert "&quot;guess&quot;: 0" in body  # call arguments, pretty-printed and escaped
    assert "step reward" in body and 'class="components"' in body
    assert "outcome" in body and "efficiency" in body  # the reward breakdown
    assert "completion tokens" in body and "environment" in body  # usage and timings
    images = re.findall(r'<img class="inline" src="([^"]+)"', body)
    assert len(images) == 1 and images[0].startswith("/file?run=before&amp;path=images")
    r = app.handle(images[0].replace("&amp;", "&"))
    assert r.status == 200 and r.content_type == "image/png" and r.body.startswith(b"\x89PNG")
    assert "default-src 'none'" in r.headers["Content-Security-Policy"]


def test_message_kinds_of_a_clean_episode(app: ViewerApp) -> None:
    row = next(r for r in app.runs["after"].rows())
    record = app.runs["after"].episode(row.episode_id)
    assert record is not None
    kinds = message_kinds(record.messages)
    assert kinds[:2] == ["system", "prompt"] and set(kinds[2:]) <= {"assistant", "tool"}


def test_compare_pairs_instances_and_shows_them_side_by_side(app: ViewerApp) -> None:
    status, body = get(app, "/compare", a="before", b="after")
    assert status == 200
    instances = re.findall(r'<tr data-instance="([^"]+)"', body)
    assert len(instances) == 30  # the guess seeds both runs played; tsp_vision is only in one
    status, body = get(app, "/compare", a="before", b="after", instance=instances[0])
    assert (
        status == 200 and body.count('class="side"') == 2 and body.count('class="transcript"') == 2
    )
    assert get(app, "/compare", a="before")[0] == 400


def test_an_episode_page_links_the_same_instance_in_other_runs(app: ViewerApp) -> None:
    row = next(r for r in app.runs["before"].rows() if r.task == GUESS)
    _, body = get(app, "/episode", run="before", id=row.episode_id)
    assert 'class="side-by-side"' in body and "after" in body


def test_unknown_episode_and_page_are_404(app: ViewerApp) -> None:
    assert get(app, "/episode", run="before", id="nope")[0] == 404
    assert get(app, "/nowhere")[0] == 404


def test_untrusted_text_is_escaped(tmp_path: Path, view_runs: Path) -> None:
    run = tmp_path / "evil"
    shutil.copytree(view_runs / "after", run)
    lines = (run / "episodes.jsonl").read_text().splitlines()
    data = json.loads(lines[0])
    data["messages"][2]["content"] = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    data["agent"] = "<b>agent</b>"
    (run / "episodes.jsonl").write_text(json.dumps(data) + "\n")
    app = ViewerApp.from_paths([run])
    for path, params in (("/", {}), ("/episode", {"run": "evil", "id": data["episode_id"]})):
        status, body = get(app, path, **params)
        assert status == 200
        assert (
            "<script>alert" not in body and "<img src=x" not in body and "<b>agent</b>" not in body
        )
        assert "&lt;script&gt;" in body or "&lt;b&gt;agent" in body


def test_files_outside_the_run_are_never_served(tmp_path: Path, view_runs: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(view_runs / "before", run)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG secret")
    (run / "images" / "link.png").symlink_to(secret)
    app = ViewerApp.from_paths([run])
    real = next((run / "images").glob("[0-9a-f]*.png")).name
    assert app.handle(f"/file?run=run&path=images/{real}").status == 200
    for bad in (
        "../secret.png",
        str(secret),
        "images/../../secret.png",
        "images/link.png",
        "episodes.jsonl",
        "run.json",
        "images",
        quote("images/\x00.png"),
    ):
        r = app.handle(f"/file?run=run&path={bad}")
        assert r.status == 404 and b"secret" not in r.body, bad


def test_a_log_symlinked_outside_the_run_is_refused(tmp_path: Path, view_runs: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    outside = tmp_path / "elsewhere.jsonl"
    shutil.copy(view_runs / "after" / "episodes.jsonl", outside)
    os.symlink(outside, run / "episodes.jsonl")
    with pytest.raises(RunDirError, match="points outside"):
        open_runs([run])


def test_bad_paths_get_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="does not exist"):
        open_runs([tmp_path / "missing"])
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunDirError, match="is not a directory"):
        open_runs([tmp_path / "file"])
    with pytest.raises(RunDirError, match="holds no run directory"):
        open_runs([tmp_path])


def test_corrupt_lines_are_skipped_and_listed(tmp_path: Path, view_runs: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(view_runs / "after", run)
    with open(run / "episodes.jsonl", "a") as f:
        f.write("{not json\n")
        f.write('{"hello": "world"}\n')
    app = ViewerApp.from_paths([run])
    assert len(app.runs["run"].rows()) == 30
    status, body = get(app, "/")
    assert status == 200 and "2 unreadable line(s) skipped" in body


def test_a_growing_run_is_indexed_incrementally(tmp_path: Path, view_runs: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    lines = (view_runs / "after" / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    log = run / "episodes.jsonl"
    log.write_bytes(b"".join(lines[:10]) + lines[10][:50])  # a line still being written
    app = ViewerApp.from_paths([run])
    assert api(app)["total"] == 10
    log.write_bytes(b"".join(lines))
    assert api(app, per=200)["total"] == 30
    log.write_bytes(b"".join(lines[:5]))  # rewritten shorter (e.g. by `bootcamp filter`)
    assert api(app)["total"] == 5


def test_scan_and_episode_at_read_single_lines(view_runs: Path) -> None:
    run = RunDir(view_runs / "after")
    refs = list(run.scan())
    assert len(refs) == 30 and refs[0].offset == 0
    assert all(a.end == b.offset for a, b in itertools.pairwise(refs))
    record = run.episode_at(refs[7].offset)
    assert record is not None and record.episode_id == refs[7].data["episode_id"]  # type: ignore[index]


def test_pages_answer_from_a_partial_index_while_a_scan_runs(view_runs: Path) -> None:
    app = ViewerApp.from_paths([view_runs / "after"], index=False)
    run = app.runs["after"]
    with run._scanning:  # another thread is reading the file
        status, body = get(app, "/")
        assert status == 200 and 'id="indexing"' in body and 'class="count">0 episode(s)' in body
    app.index_in_background().join()
    status, body = get(app, "/")
    assert 'id="indexing"' not in body and "30 episode(s) match" in body


def test_a_newer_schema_is_refused_with_a_clear_error(tmp_path: Path, view_runs: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(view_runs / "after", run)
    data = json.loads((run / "episodes.jsonl").read_text().splitlines()[0])
    (run / "episodes.jsonl").write_text(json.dumps({**data, "schema_version": 999}) + "\n")
    with pytest.raises(RunDirError, match="newer than this agentharness"):
        open_runs([run])


def test_every_link_of_the_html_report_opens_a_viewer_page(
    app: ViewerApp, view_runs: Path, tmp_path: Path
) -> None:
    from agentharness.loop.html_report import write_html_report

    viewer = "http://127.0.0.1:8765"
    page = write_html_report(view_runs, tmp_path / "report.html", viewer).read_text()
    links = [
        html.unescape(h)[len(viewer) :] for h in re.findall(r'<a class="view" href="([^"]+)"', page)
    ]
    routes = {link.split("?")[0] for link in links}
    assert routes == {"/", "/episode"}  # no before/after rounds here, so no compare links
    assert any("end_reason=" in link for link in links)  # failure groups, filtered
    for link in links:
        r = app.handle(link)
        assert r.status == 200, link
        if link.startswith("/?"):
            assert 'class="count">0 episode' not in r.body.decode(), link
    assert 'class="view"' not in write_html_report(view_runs, tmp_path / "plain.html").read_text()


def test_bootcamp_view_serves_until_stopped(view_runs: Path) -> None:
    import subprocess
    import sys
    import urllib.request

    proc = subprocess.Popen(
        [sys.executable, "-m", "agentharness.cli.main", "view", str(view_runs), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = re.search(r"http://\S+/", line)
        assert url, line
        totals = []
        for _ in range(600):  # the index fills in the background; the page answers meanwhile
            with urllib.request.urlopen(url.group(0) + "api/episodes?per=200", timeout=60) as r:
                totals.append(json.loads(r.read())["total"])
            if totals[-1] == 62:
                break
            time.sleep(0.1)
        assert totals[-1] == 62 and totals == sorted(totals)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_bootcamp_view_bad_path_is_a_one_line_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentharness.cli.main import app

    r = CliRunner().invoke(app, ["view", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "does not exist" in r.output
