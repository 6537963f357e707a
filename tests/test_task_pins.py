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
import os
import subprocess
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


def instance_hash(spec: TaskSpec[Any], seed: int, difficulty: str) -> str:
    instance = spec.instance(seed, difficulty)
    return hashlib.sha256(instance.model_dump_json().encode()).hexdigest()[:16]


def pins_of(spec: TaskSpec[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for difficulty in spec.difficulties:
        for seed in SEEDS:
            instance = spec.instance(seed, difficulty)
            episode, _ = asyncio.run(run_one(instance, ExpertAgent().policy(instance)))
            reward = episode.reward()
            out[f"{difficulty}/{seed}"] = {
                "instance": instance_hash(spec, seed, difficulty),
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


def other_cpu_environment() -> dict[str, str]:
    """This environment with numpy's SIMD kernels cut back to its baseline and OpenBLAS
    on its oldest x86 kernels: another CPU, as far as floating-point results go."""
    from numpy._core import _multiarray_umath as umath

    found = [f for f in getattr(umath, "__cpu_dispatch__", []) if umath.__cpu_features__.get(f)]
    env = {**os.environ, "OPENBLAS_CORETYPE": "Prescott"}
    if found:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(found)
    return env


def test_released_task_versions_do_not_depend_on_the_cpu() -> None:
    """The same task version and seed give the same instance and expert result on every
    machine.

    A generator or expert that runs a chaotic search (a Metropolis walk, an optimizer
    that takes another path) on BLAS dot products or SIMD maths ends elsewhere on
    another CPU (molecule-v3 did, on a fresh CI machine). Re-derive every pin under
    other CPU features and compare.
    """
    code = (
        "import json, test_task_pins as t\n"
        "from agentharness.core.registry import builtin_task_names, get_task\n"
        "specs = [get_task(n) for n in builtin_task_names()]\n"
        "print(json.dumps({s.id: t.pins_of(s) for s in specs}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parent,
        env=other_cpu_environment(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    elsewhere = json.loads(done.stdout.strip().splitlines()[-1])
    pinned = _pinned()
    differ = {
        f"{task}/{case}": (pinned[task][case], got)
        for task, cases in elsewhere.items()
        if task in pinned  # an unpinned version is flagged by the test above
        for case, got in cases.items()
        if pinned[task].get(case) != got
    }
    assert not differ, (
        f"these pins change with the CPU's floating-point kernels: {differ}. Keep BLAS "
        "(@, dot, linalg) and SIMD maths (power, exp) out of anything a decision or a stored "
        "value depends on, or round what is stored (see tasks/molecule/simulator.py)"
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
