"""A released task version never changes: its instances and expert results are pinned.

For every built-in task version, two seeds per difficulty: a hash of the generated
instance and the expert's reward, success and number of tool calls. A refactor must
leave them as they are; a change to instances or rewards is a new version, which is
pinned anew with::

    python tests/test_task_pins.py --update [TASK,TASK,...]
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentharness.agents.scripted import ExpertAgent
from agentharness.core.registry import builtin_task_names, get_task
from agentharness.core.task import TaskSpec
from agentharness.rollout.runner import run_one

PINS = Path(__file__).parent / "data" / "task_pins.json"
SEEDS = (0, 1)


def pins_of(spec: TaskSpec[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for difficulty in spec.difficulties:
        for seed in SEEDS:
            instance = spec.instance(seed, difficulty)
            episode, _ = asyncio.run(run_one(instance, ExpertAgent().policy(instance)))
            reward = episode.reward()
            out[f"{difficulty}/{seed}"] = {
                "instance": hashlib.sha256(instance.model_dump_json().encode()).hexdigest()[:16],
                "reward": round(reward.total, 6),
                "success": reward.success,
                "tool_calls": len(episode.tool_calls),
            }
    return out


def _pinned() -> dict[str, Any]:
    return json.loads(PINS.read_text()) if PINS.exists() else {}


@pytest.mark.parametrize("name", builtin_task_names())
def test_a_released_task_version_is_unchanged(name: str) -> None:
    spec = get_task(name)
    pinned = _pinned().get(spec.id)
    assert pinned is not None, (
        f"{spec.id} is not pinned: a new version is pinned with `python tests/test_task_pins.py "
        "--update` once it is final"
    )
    now = pins_of(spec)
    changed = {k: (pinned.get(k), v) for k, v in now.items() if pinned.get(k) != v}
    assert not changed, (
        f"{spec.id} changed in place ({changed}); a change to instances or rewards is a new "
        "version (bump TaskSpec.version)"
    )


if __name__ == "__main__" and "--update" in sys.argv:
    pins = _pinned()
    after = sys.argv[sys.argv.index("--update") + 1 :]
    for name in after[0].split(",") if after else builtin_task_names():
        spec = get_task(name)
        pins[spec.id] = pins_of(spec)
        print(spec.id, "pinned", flush=True)
    PINS.parent.mkdir(exist_ok=True)
    PINS.write_text(json.dumps(dict(sorted(pins.items())), indent=1) + "\n")
