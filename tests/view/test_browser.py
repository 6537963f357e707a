"""The viewer in a real browser: Chromium driven by Playwright (scripts/test.sh installs both).

These run in CI and never skip: a missing browser is a failed setup, reported as such.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentharness import get_task
from agentharness.view import ViewerApp, make_server

TSP = get_task("tsp_vision").id

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def chromium_path() -> str:
    path = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if path is None:
        pytest.fail(
            "no chromium on PATH: install it (scripts/test.sh runs `apt-get install -y chromium`)"
        )
    return path


@pytest.fixture(scope="module")
def base_url(view_runs: Path) -> Iterator[str]:
    server = make_server(ViewerApp.from_paths([view_runs]), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    pg = context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    pg.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    pg.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    pg.on("requestfailed", lambda r: problems.append(f"failed {r.url}"))
    yield pg
    context.close()
    assert not problems, problems


def rows(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#episodes tbody tr",
        """trs => trs.map(tr => ({
            task: tr.querySelector('.task').textContent,
            reward: tr.querySelector('.reward').textContent,
            success: tr.querySelector('.success').textContent,
            agent: tr.querySelector('.agent').textContent}))""",
    )


def test_the_episode_table_renders_filters_and_sorts(page: Any, base_url: str) -> None:
    page.goto(base_url + "/")
    assert page.locator("#runs tbody tr").count() == 2
    assert "62 episode(s) match" in page.locator(".pager .count").first.inner_text()
    assert len(rows(page)) == 50  # first page

    with page.expect_navigation():  # choosing a task submits the form (view.js)
        page.select_option("select[name=task]", TSP)
    assert [r["task"] for r in rows(page)] == [TSP]

    page.goto(base_url + "/")
    with page.expect_navigation():
        page.select_option("select[name=success]", "no")
    failed = rows(page)
    assert failed and all(r["success"] == "no" for r in failed)
    page.fill("input[name=min_reward]", "0.5")  # no failure scores that high here
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    assert rows(page) == []
    assert page.locator(".pager .count").first.inner_text().startswith("0 episode(s) match")

    page.goto(base_url + "/?per=100")
    with page.expect_navigation():
        page.click("th a[data-sort=reward]")
    rewards = [float(r["reward"]) for r in rows(page)]
    assert len(rewards) == 62 and rewards == sorted(rewards, reverse=True)
    with page.expect_navigation():
        page.click("th a[data-sort=reward]")
    rewards = [float(r["reward"]) for r in rows(page)]
    assert rewards == sorted(rewards)


def test_pagination_walks_every_page(page: Any, base_url: str) -> None:
    page.goto(base_url + "/?per=25")
    seen = len(rows(page))
    while page.locator("a[rel=next]").count():
        with page.expect_navigation():
            page.locator("a[rel=next]").first.click()
        seen += len(rows(page))
    assert seen == 62


def test_an_episode_page_shows_the_transcript_and_its_images_load(page: Any, base_url: str) -> None:
    page.goto(base_url + "/?agent=handmade")
    with page.expect_navigation():
        page.click("#episodes tbody tr a")
    for kind in ("system", "prompt", "assistant", "tool", "format-error", "nudge", "tool-images"):
        assert page.locator(f".transcript [data-kind='{kind}']").count() >= 1, kind
    assert page.locator(".msg.tool.error").count() == 1
    assert page.locator(".call .tool-name").all_inner_texts()[:1] == ["probe"]
    assert page.locator("table.components tbody tr").count() == 2
    img = page.locator("img.inline").first
    img.scroll_into_view_if_needed()
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")

    page.goto(base_url + f"/?task={TSP}")
    with page.expect_navigation():
        page.click("#episodes tbody tr a")
    images = page.locator("img.inline")
    assert images.count() >= 1
    for i in range(images.count()):
        images.nth(i).scroll_into_view_if_needed()
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 100)")


def test_two_runs_side_by_side(page: Any, base_url: str) -> None:
    page.goto(base_url + "/")
    page.select_option("form.compare select[name=a]", "before")
    page.select_option("form.compare select[name=b]", "after")
    with page.expect_navigation():
        page.click("form.compare button")
    assert page.locator("#pairs tbody tr").count() == 30
    with page.expect_navigation():
        page.click("#pairs tbody tr a")
    sides = page.locator(".side")
    assert sides.count() == 2
    assert sides.nth(0).get_attribute("data-run") == "before"
    assert sides.nth(1).get_attribute("data-run") == "after"
    assert sides.nth(0).locator(".transcript .msg").count() >= 3
    assert sides.nth(1).locator(".transcript .msg").count() >= 3


def test_the_html_report_links_into_the_viewer(
    page: Any, base_url: str, view_runs: Path, tmp_path: Path
) -> None:
    from agentharness.loop.html_report import write_html_report

    report = write_html_report(view_runs, tmp_path / "report.html", base_url)
    page.goto(report.as_uri())
    with page.expect_navigation():
        page.locator(f"#task-{TSP} a.view").first.click()
    assert page.url.startswith(base_url)
    assert [r["task"] for r in rows(page)] == [TSP]
