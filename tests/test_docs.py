"""The docs' code runs as written: the first-task walkthrough builds a task that passes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentharness.conformance import check_task
from agentharness.core import registry

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _python_blocks(page: Path) -> str:
    return "\n".join(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S))


def test_the_walkthrough_task_passes_the_whole_check(monkeypatch: pytest.MonkeyPatch) -> None:
    namespace: dict[str, object] = {"__name__": "lock_task"}
    exec(compile(_python_blocks(DOCS / "first-task.md"), "first-task.md", "exec"), namespace)
    lock = namespace["LOCK"]
    registry.all_tasks()
    monkeypatch.setitem(registry._REGISTRY, "lock-v1", lock)
    report = check_task(lock, seeds=3)  # type: ignore[arg-type]
    failures = [f"{r.name}: {r.detail}" for r in report.results if not r.passed]
    assert not failures, "\n".join(failures)
    assert report.adversarial is not None and len(report.results) == 8


def test_the_pages_link_to_each_other() -> None:
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([\w./-]+\.md)\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
