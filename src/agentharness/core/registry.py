"""Task registry with versioned ids, and :func:`make`.

Built-in tasks live in ``agentharness.tasks.<name>`` and expose ``TASK`` (a
:class:`TaskSpec`). Other packages register tasks through the entry-point group
``agentharness.tasks`` (``name = "pkg.module:TASK"``) or by calling :func:`register`.

Task sources convert environments from elsewhere and are addressed by a prefix
(``gym:FrozenLake-v1``, ``rg:leg_counting``, ``mcp:<command or URL>#<module:function>``).
:func:`get_task` is the one place that resolves them: it imports the source module
lazily (its dependencies are extras) and calls its ``load(address)``; every command that
takes a task id goes through it.
"""

from __future__ import annotations

import importlib
import re
import warnings
from importlib.metadata import entry_points
from typing import Any

from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.task import Budgets, TaskSpec

ENTRY_POINT_GROUP = "agentharness.tasks"

# The ten tasks of the suite, in the order of TASKS.md (text first, then vision).
BUILTIN_TASKS: tuple[str, ...] = (
    "battery",
    "finance",
    "robot_reach",
    "thermal",
    "molecule",
    "harmony",
    "escape_room",
    "holdem",
    "flange",
    "tsp_vision",
)

# prefix -> (module, what it converts, an example address). Each module defines
# ``load(rest: str) -> TaskSpec`` and raises :class:`UnknownTaskError` for a bad address.
TASK_SOURCES: dict[str, tuple[str, str, str]] = {
    "gym": (
        "agentharness.sources.gym",
        "Gymnasium environments; append @vision for image observations",
        "gym:FrozenLake-v1",
    ),
    "rg": (
        "agentharness.sources.reasoning_gym",
        "reasoning-gym procedural datasets, answered with an `answer` tool",
        "rg:leg_counting",
    ),
    "mcp": (
        "agentharness.sources.mcp",
        "an MCP server's tools (stdio command or streamable-HTTP URL) and a reward callable",
        "mcp:python -m my_server#my_rewards:score",
    ),
}
_EXTRAS = {"gym": "gym", "rg": "reasoning-gym", "mcp": "mcp"}

_REGISTRY: dict[str, TaskSpec[Any]] = {}
_loaded = False

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class UnknownTaskError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def register(spec: TaskSpec[Any]) -> TaskSpec[Any]:
    """Add a task; registering the same id twice with a different spec is an error."""
    existing = _REGISTRY.get(spec.id)
    if existing is not None and existing is not spec:
        raise ValueError(
            f"task id {spec.id} is already registered; bump the version for a changed task"
        )
    _REGISTRY[spec.id] = spec
    return spec


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in BUILTIN_TASKS:
        module = importlib.import_module(f"agentharness.tasks.{name}")
        register(module.TASK)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            for spec in obj if isinstance(obj, list | tuple) else [obj]:
                register(spec)
        except Exception as e:  # a broken plugin must not break the built-in tasks
            warnings.warn(f"could not load task entry point {ep.name!r}: {e}", stacklevel=2)


def all_tasks() -> list[TaskSpec[Any]]:
    _load_all()
    return sorted(_REGISTRY.values(), key=lambda s: (s.name, s.version))


def split_task_id(task_id: str) -> tuple[str, int | None]:
    """The one parser of task ids: ``escape_room-v1`` -> ``("escape_room", 1)``, and a
    bare ``escape_room`` -> ``("escape_room", None)`` (its latest version)."""
    name, sep, version = task_id.strip().rpartition("-v")
    if sep and version.isdigit():
        return name, int(version)
    return task_id.strip(), None


def _from_source(address: str) -> TaskSpec[Any]:
    spec = _REGISTRY.get(address)
    if spec is not None:
        return spec
    prefix, _, rest = address.partition(":")
    module_name, _, example = TASK_SOURCES[prefix]
    if not rest.strip():
        raise UnknownTaskError(f"'{address}' names no {prefix}: task; e.g. {example}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UnknownTaskError(
            f"{prefix}: tasks need a package that is not installed ({e.name or e}); "
            f"install it with: pip install 'agentharness[{_EXTRAS[prefix]}]'"
        ) from e
    spec = module.load(rest)
    if spec.id != address:
        raise RuntimeError(f"task source {prefix} returned {spec.id} for {address}")
    return register(spec)


def get_task(task_id: str) -> TaskSpec[Any]:
    """Look up ``name-vN``, ``name`` for its latest version, or a source address."""
    _load_all()
    prefix, sep, rest = task_id.partition(":")
    if sep:
        if prefix.strip() in TASK_SOURCES:
            return _from_source(f"{prefix.strip()}:{rest.strip()}")
        raise UnknownTaskError(
            f"unknown task source '{prefix}:' in '{task_id}'; the sources are "
            + ", ".join(f"{p}: (e.g. {ex})" for p, (_, _, ex) in TASK_SOURCES.items())
        )
    name, version = split_task_id(task_id)
    if not _NAME.match(name):
        raise UnknownTaskError(
            f"'{task_id}' is not a task id (expected e.g. 'escape_room' or 'escape_room-v1')"
        )
    if version is not None:
        spec = _REGISTRY.get(f"{name}-v{version}")
        if spec is not None:
            return spec
        current = [s.id for s in _REGISTRY.values() if s.name == name]
        if current:
            raise UnknownTaskError(
                f"{name} has no version {version} here (registered: {', '.join(sorted(current))}); "
                "a change to a task's instances or rewards is a new version and the old one is "
                f"retired, so its logs replay only with the agentharness that made them. Use "
                f"'{name}' for the current version."
            )
    else:
        versions = [s for s in _REGISTRY.values() if s.name == name]
        if versions:
            return max(versions, key=lambda s: s.version)
    known = ", ".join(s.id for s in all_tasks())
    raise UnknownTaskError(f"unknown task '{task_id}'. Known tasks: {known}")


def resolve_tasks(spec: str) -> list[TaskSpec[Any]]:
    """``all`` or a comma-separated list of ids (with or without version) and source
    addresses. ``all`` is the registered tasks: a source's tasks are countless, so they
    are named one by one."""
    if spec.strip() == "all":
        return all_tasks()
    return [get_task(t) for t in spec.split(",") if t.strip()]


class Env:
    """A task at a fixed difficulty and knobs: generates instances, opens episodes."""

    def __init__(
        self,
        spec: TaskSpec[Any],
        difficulty: str = "medium",
        budgets: Budgets | None = None,
        **knobs: Any,
    ):
        self.spec = spec
        self.difficulty = difficulty
        self.config = spec.make_config(difficulty, **knobs)
        self.budgets = budgets or spec.interaction.budgets

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.spec.world.tool_schemas()

    def generate(self, seed: int) -> Instance:
        return self.spec.instance_from_config(self.config, seed, self.difficulty)

    def reset(self, seed: int | None = None, instance: Instance | None = None) -> Episode:
        """A new episode on ``instance``, or on the instance generated from ``seed``."""
        if instance is None:
            if seed is None:
                raise ValueError("reset needs a seed or an instance")
            instance = self.generate(seed)
        elif instance.task != self.spec.id:
            raise ValueError(f"instance is for {instance.task}, this env is {self.spec.id}")
        return Episode(spec=self.spec, instance=instance, budgets=self.budgets)


def make(
    task_id: str, difficulty: str = "medium", budgets: Budgets | None = None, **knobs: Any
) -> Env:
    """An :class:`Env` for ``task_id`` (``name`` or ``name-vN``) at ``difficulty``."""
    return Env(get_task(task_id), difficulty=difficulty, budgets=budgets, **knobs)


def episode_for(instance: Instance, budgets: Budgets | None = None) -> Episode:
    """An episode on a stored instance (replay, held-out and synthesized sets)."""
    spec = get_task(instance.task)
    return Episode(spec=spec, instance=instance, budgets=budgets or spec.interaction.budgets)
