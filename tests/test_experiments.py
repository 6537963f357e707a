"""The experiment script's defaults name tasks this checkout serves.

``experiments/smollm2_sft_grpo.sh`` pins task versions (``harmony-v3``, ...) so that its
results say what they measured; when a task gets a new version the old one is retired
and the script would stop at its first ``generate``. This catches that before a
multi-hour run does.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentharness.core.registry import get_task

SCRIPT = Path(__file__).parent.parent / "experiments" / "smollm2_sft_grpo.sh"


def default(name: str) -> str:
    match = re.search(rf'^{name}=\$\{{{name}:-"?([^"}}]*)"?\}}', SCRIPT.read_text(), re.M)
    assert match, f"{name} has no default in {SCRIPT}"
    return match.group(1)


def test_the_default_tasks_are_current_versions() -> None:
    specs = default("TASK_SPECS").split()
    assert len(specs) >= 4
    for spec in specs:
        task_id, turns, tokens = spec.split(":")
        assert get_task(task_id).id == task_id
        assert int(turns) >= 1 and int(tokens) >= 1
    for task_id in default("GRPO_TASKS").split(","):
        assert task_id in [s.split(":")[0] for s in specs]
        assert get_task(task_id).id == task_id
