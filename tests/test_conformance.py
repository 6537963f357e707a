"""The conformance check over every registered task."""

from __future__ import annotations

import pytest

from agentharness.conformance import check_task
from agentharness.core.registry import BUILTIN_TASKS, all_tasks


def test_builtin_tasks_are_registered() -> None:
    names = {s.name for s in all_tasks()}
    assert set(BUILTIN_TASKS) <= names


@pytest.mark.parametrize("spec", all_tasks(), ids=lambda s: s.id)
def test_task_conforms(spec) -> None:
    report = check_task(spec, seeds=3)
    failures = [f"{r.name}: {r.detail}" for r in report.results if not r.passed]
    assert not failures, "\n".join(failures)
    assert len(report.results) == 5
