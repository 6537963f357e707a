"""Our tasks as TRL environments: ``GRPOTrainer(environment_factory=environment_factory(...))``.

TRL (>= 1.0, with transformers >= 5.2) plays multi-turn tool use itself when given an
``environment_factory``: a zero-argument callable returning an environment object whose
public methods are the tools (their schemas read by transformers' ``get_json_schema`` from
type hints and Google-style docstrings), with ``reset(**row)`` called before each rollout
and ``get_reward()`` after it. :func:`environment_factory` builds such a class per task:

* one method per tool of the task, with the signature and docstring of the task's tool
  schema (JSON types mapped to Python ones, enums as ``(choices: [...])``); a call steps
  the task's :class:`~agentharness.core.episode.Episode` with that tool call and returns
  the tool's answer text (argument errors and unknown values come back as text, as in
  every other driver, never as exceptions);
* ``reset(**row)`` opens a fresh episode on the row's ``instance`` (the Instance JSON
  that ``bootcamp export rl --format trl`` writes), under the row's ``max_turns`` when it
  has one; instances are pooled and reused by TRL, so nothing survives a reset;
* ``get_reward()`` is the task's ``Reward.total``; a rollout that stopped calling tools
  before the episode ended is finished as ``no_answer`` first, as the runner does.

Several tasks give a ``{task id: class}`` dict, TRL's multi-environment form: each row's
``environment`` column (written by the export) picks its class, so each prompt is shown
only its own task's tools. Each TRL tool call is one step of the episode, so the task's
turn budget counts tool calls here. Images a tool returns are noted in the text only.

transformers below 5.13 needs ``jmespath`` to parse tool calls (the ``train`` extra has it).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall
from agentharness.core.registry import episode_for, get_task, resolve_tasks
from agentharness.core.task import Budgets, TaskSpec
from agentharness.export.verl import verl_tool_schema
from agentharness.train import TrainInputError

_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
_RESERVED = {"reset", "get_reward"}


class TaskEnvironment:
    """Base of the generated environment classes (one subclass per task)."""

    spec: ClassVar[TaskSpec]
    budgets: ClassVar[Budgets | None] = None

    def __init__(self) -> None:
        self._episode: Episode | None = None

    def reset(self, **row: Any) -> str | None:
        """Open a fresh episode on the row's ``instance``; the prompt comes from the dataset."""
        raw = row.get("instance")
        if raw is None:
            raise TrainInputError(
                "a TRL row needs 'instance' (the Instance JSON): build the dataset with "
                "`bootcamp export rl --format trl`"
            )
        instance = raw if isinstance(raw, Instance) else Instance.model_validate_json(str(raw))
        if get_task(instance.task).id != self.spec.id:
            raise TrainInputError(
                f"a {instance.task} row reached the {self.spec.id} environment; pass every task of "
                "the dataset to environment_factory (rows pick theirs by 'environment')"
            )
        try:  # the row's turn budget (`export rl --task-turns`), else the class's budgets
            self._episode = episode_for(instance, self.budgets, max_turns=row.get("max_turns"))
        except ValueError as e:
            raise TrainInputError(f"the row's max_turns: {e}") from e
        return None

    def get_reward(self) -> float:
        """``Reward.total`` of the episode (finished as ``no_answer`` if the model stopped early)."""
        episode = self._require()
        if not episode.done:
            episode.finish("no_answer")
        return float(episode.reward().total)

    def _require(self) -> Episode:
        if self._episode is None:
            raise RuntimeError("the environment was used before reset(); TRL calls reset first")
        return self._episode

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        episode = self._require()
        if episode.done:
            return f"The episode has ended ({episode.end_reason}); no more actions are possible."
        call = ToolCall.make(f"call_{episode.turns + 1}", name, arguments)
        obs = episode.step(Message(role="assistant", content="", tool_calls=[call]))
        text = "\n".join(m.text for m in obs.messages if m.text)
        if obs.done and obs.end_reason not in ("answered", "completed"):
            text += f"\n(The episode has ended: {obs.end_reason}.)"
        return text


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _tool_method(schema: dict[str, Any]) -> Callable[..., str]:
    """A method with the signature and docstring transformers' ``get_json_schema`` reads."""
    function = verl_tool_schema(schema)["function"]  # $refs inlined, one JSON type per parameter
    name: str = function["name"]
    params: dict[str, Any] = function["parameters"].get("properties", {})
    required = set(function["parameters"].get("required", []))
    ordered = sorted(params, key=lambda p: p not in required)  # no default before a required one
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    doc_args = []
    for p in ordered:
        prop = params[p]
        py_type = _JSON_TYPES.get(prop.get("type", "string"), str)
        annotations[p] = py_type
        signature.append(
            inspect.Parameter(
                p,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=py_type,
                default=inspect.Parameter.empty if p in required else None,
            )
        )
        desc = _one_line(prop.get("description") or p)
        if isinstance(prop.get("enum"), list):
            desc += f" (choices: {json.dumps(prop['enum'])})"
        doc_args.append(f"    {p}: {desc}")

    def method(self: TaskEnvironment, **kwargs: Any) -> str:
        # Optional arguments the model left out arrive as None: let the task's defaults apply.
        args = {k: v for k, v in kwargs.items() if v is not None or k in required}
        return self._call(name, args)

    description = _one_line(function.get("description") or name)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(doc_args) if doc_args else "")
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]
    return method


def environment_class(
    task: str | TaskSpec, budgets: Budgets | None = None
) -> type[TaskEnvironment]:
    """The TRL environment class of one task (see the module docstring)."""
    spec = task if isinstance(task, TaskSpec) else get_task(task)
    members: dict[str, Any] = {
        "spec": spec,
        "budgets": budgets,
        "__doc__": f"{spec.id}: {spec.description}",
        "__module__": __name__,
    }
    for schema in spec.world.tool_schemas():
        name = schema["function"]["name"]
        if name in _RESERVED or name.startswith("_") or not name.isidentifier():
            raise TrainInputError(
                f"{spec.id}: a tool named {name!r} cannot be a TRL environment method"
            )
        members[name] = _tool_method(schema)
    cls_name = "".join(part.title() for part in spec.name.split("_")) + "Environment"
    return type(cls_name, (TaskEnvironment,), members)


def environment_factory(
    tasks: str | Sequence[str], *, budgets: Budgets | None = None
) -> type[TaskEnvironment] | dict[str, type[TaskEnvironment]]:
    """What ``GRPOTrainer(environment_factory=...)`` takes for ``tasks``.

    ``tasks`` is a task id, a comma-separated list, ``"all"`` or a list of ids. One task
    gives its environment class (a zero-argument callable); several give ``{task id:
    class}``, and every dataset row then needs ``environment`` (the export writes it).
    """
    specs = resolve_tasks(tasks) if isinstance(tasks, str) else [get_task(t) for t in tasks]
    if not specs:
        raise TrainInputError("no tasks given to environment_factory")
    classes = {s.id: environment_class(s, budgets) for s in specs}
    if len(classes) == 1:
        return next(iter(classes.values()))
    return classes
