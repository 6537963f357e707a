from __future__ import annotations

import pytest

from agentharness import get_task, make, resolve_tasks
from agentharness.core.registry import UnknownTaskError, register
from agentharness.core.task import TaskConfigError


def test_ids_with_and_without_version() -> None:
    assert get_task("guess").id == "guess-v1"
    assert get_task("guess-v1") is get_task("guess")


def test_unknown_task_lists_known() -> None:
    with pytest.raises(UnknownTaskError, match="guess-v1"):
        get_task("nope")
    with pytest.raises(UnknownTaskError, match="not a task id"):
        get_task("Bad Id!")


def test_resolve_tasks_all_and_list() -> None:
    assert "guess-v1" in [s.id for s in resolve_tasks("all")]
    assert [s.id for s in resolve_tasks("guess, guess-v1")] == ["guess-v1", "guess-v1"]


def test_knobs_override_and_errors() -> None:
    env = make("guess", difficulty="easy", high=7)
    assert env.generate(0).public == {"high": 7}
    with pytest.raises(TaskConfigError, match="no knob"):
        make("guess", colour="red")
    with pytest.raises(TaskConfigError, match="no difficulty 'extreme'"):
        make("guess", difficulty="extreme")
    with pytest.raises(TaskConfigError, match="bad knob value"):
        make("guess", high=1)


def test_determinism_and_instance_id() -> None:
    env = make("guess")
    assert env.generate(4) == env.generate(4)
    assert env.generate(4).instance_id == env.generate(4).instance_id
    assert env.generate(4).instance_id != env.generate(5).instance_id


def test_reregistering_a_changed_task_needs_a_new_version() -> None:
    import dataclasses

    changed = dataclasses.replace(get_task("guess"), description="changed")
    with pytest.raises(ValueError, match="bump the version"):
        register(changed)
    register(dataclasses.replace(changed, version=2))
    assert get_task("guess").version == 2 and get_task("guess-v1").version == 1
    from agentharness.core import registry

    del registry._REGISTRY["guess-v2"]
