"""Every knob of every task at its bounds: an instance, or an error that says what to change.

A knob value the config accepts must never crash the generator with an unexplained
exception or leave it drawing forever: it either yields an instance or raises a
:class:`TaskConfigError` (an :class:`UnsatisfiableKnobsError` when the generator tried and
found none), whose message the CLI and the server pass on as they are.
"""

from __future__ import annotations

from typing import Any

import annotated_types as at
import pytest
from pydantic.fields import FieldInfo

from agentharness.core.registry import all_tasks, get_task
from agentharness.core.task import Budgets, TaskConfigError

TASKS = [spec.id for spec in all_tasks() if not spec.address]


def bounds(field: FieldInfo) -> list[Any]:
    """The field's extreme accepted values (both for a flag; just inside an exclusive bound);
    none for other kinds."""
    if field.annotation is bool:
        return [True, False]
    step = 1 if field.annotation is int else 1e-6
    values: list[Any] = []
    for limit in field.metadata:
        if isinstance(limit, at.Ge):
            values.append(limit.ge)
        elif isinstance(limit, at.Le):
            values.append(limit.le)
        elif isinstance(limit, at.Gt):
            values.append(limit.gt + step)
        elif isinstance(limit, at.Lt):
            values.append(limit.lt - step)
    return values


@pytest.mark.parametrize("task_id", TASKS)
def test_every_knob_bound_gives_an_instance_or_a_clear_error(task_id: str) -> None:
    spec = get_task(task_id)
    tried = drawn = 0
    for name, field in spec.config_model.model_fields.items():
        for value in bounds(field):
            for difficulty in spec.difficulties:
                tried += 1
                try:
                    instance = spec.instance(0, difficulty, **{name: value})
                except TaskConfigError as e:
                    # names the task, so a run over many tasks says which one refused
                    assert spec.name in str(e), e
                    continue
                drawn += 1
                assert isinstance(spec.interaction.budgets_for(instance), Budgets)
    assert tried and drawn, f"{task_id}: no knob bound tried or drawn"
