"""Task registry with versioned ids, and :func:`make`.

Tasks register next to their code, lazily (as Gymnasium's registry does): the built-in
tasks name themselves in ``agentharness/tasks/__init__.py`` with
``register_lazy("thermal", "agentharness.tasks.thermal:TASK")``, so importing the registry
imports no simulator, :func:`get_task` ``("thermal")`` imports only thermal and
:func:`all_tasks` imports them all. Other packages register tasks through the entry-point
group ``agentharness.tasks`` (``name = "pkg.module:TASK"``, loaded the same lazy way, by
its name) or by calling :func:`register` with a :class:`TaskSpec`.

Task sources convert environments from elsewhere and are addressed by a prefix
(``gym:FrozenLake-v1``, ``rg:leg_counting``, ``mcp:<command or URL>#<module:function>``).
:func:`get_task` is the one place that resolves them: it imports the source module
lazily (its dependencies are extras) and calls its ``load(address)``; every command that
takes a task id goes through it.
"""

from __future__ import annotations

import importlib
import operator
import re
import threading
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, SupportsIndex, TypeVar, cast

from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.task import Budgets, TaskSpec

ENTRY_POINT_GROUP = "agentharness.tasks"
BUILTIN_PACKAGE = "agentharness.tasks"
V = TypeVar("V")

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
# The third-party packages each source imports (lazily, when a task is loaded): missing
# one is the install hint, not a traceback.
_SOURCE_PACKAGES = {
    "gym": {"gymnasium", "pygame", "jsonschema"},
    "rg": {"reasoning_gym"},
    "mcp": {"mcp", "jsonschema"},
}

_REGISTRY: dict[str, TaskSpec[Any]] = {}
# Task name -> where its TaskSpec (or a list of them) is, not imported until needed.
_LAZY: dict[str, EntryPoint] = {}
_imported: set[str] = set()  # names in _LAZY that have been loaded
_builtins_named = False  # agentharness.tasks has run its register_lazy calls
_plugins_named = False  # the entry-point group has been read
_loaded = False  # every lazy entry has been loaded
_lock = threading.RLock()

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


def register_lazy(name: str, entry_point: str) -> None:
    """Name a task whose spec is imported only when it is asked for.

    ``entry_point`` is ``"package.module:ATTRIBUTE"``, the attribute a :class:`TaskSpec`
    (or a list of them, all named ``name``). The first :func:`get_task` of ``name`` (or
    :func:`all_tasks`) imports the module and registers what it finds.
    """
    if not _NAME.match(name):
        raise ValueError(f"task name {name!r} must match {_NAME.pattern}")
    module, sep, attr = entry_point.partition(":")
    if not (sep and module and attr):
        raise ValueError(f"entry point {entry_point!r} must read 'package.module:ATTRIBUTE'")
    with _lock:
        _LAZY.setdefault(name, EntryPoint(name=name, value=entry_point, group=ENTRY_POINT_GROUP))


def _name_builtins() -> None:
    global _builtins_named
    if not _builtins_named:
        _builtins_named = True
        importlib.import_module(BUILTIN_PACKAGE)  # its register_lazy calls


def _name_plugins() -> None:
    global _plugins_named
    if _plugins_named:
        return
    _plugins_named = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _LAZY.setdefault(ep.name, ep)


def _is_builtin(ep: EntryPoint) -> bool:
    return ep.value.startswith(BUILTIN_PACKAGE + ".")


def _load(name: str) -> None:
    """Import the lazily registered task ``name`` (once), if there is one."""
    ep = _LAZY.get(name)
    if ep is None or name in _imported:
        return
    _imported.add(name)
    try:
        obj = ep.load()
        for spec in obj if isinstance(obj, list | tuple) else [obj]:
            register(spec)
    except Exception as e:
        if _is_builtin(ep):
            _imported.discard(name)  # say it again next time: a built-in task must load
            raise
        # a broken plugin must not break the built-in tasks
        warnings.warn(f"could not load task entry point {ep.name!r}: {e}", stacklevel=3)


def _load_name(name: str) -> None:
    """Make every registration of the task ``name`` that can be found by name."""
    with _lock:
        _name_builtins()
        if name not in _LAZY:
            _name_plugins()
        _load(name)


def _load_all() -> None:
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
        _name_builtins()
        _name_plugins()
        for name in list(_LAZY):
            _load(name)


def builtin_task_names() -> tuple[str, ...]:
    """The names of the tasks that ship in :mod:`agentharness.tasks`, in its order (the
    order of TASKS.md), without importing any of them."""
    with _lock:
        _name_builtins()
        return tuple(n for n, ep in _LAZY.items() if _is_builtin(ep))


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
    hint = f"install it with: pip install 'agentharness[{_EXTRAS[prefix]}]'"
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UnknownTaskError(
            f"{prefix}: tasks need a package that is not installed ({e.name or e}); {hint}"
        ) from e
    try:
        spec = module.load(rest)
    except ImportError as e:
        if (e.name or "").split(".")[0] not in _SOURCE_PACKAGES[prefix]:
            raise  # not the source's own dependency (e.g. a module the address names)
        raise UnknownTaskError(
            f"{prefix}: tasks need a package that is not installed ({e.name}); {hint}"
        ) from e
    if spec.id != address:
        raise RuntimeError(f"task source {prefix} returned {spec.id} for {address}")
    return register(spec)


def _registered(name: str, version: int | None) -> TaskSpec[Any] | None:
    if version is not None:
        return _REGISTRY.get(f"{name}-v{version}")
    versions = [s for s in _REGISTRY.values() if s.name == name]
    return max(versions, key=lambda s: s.version) if versions else None


def get_task(task_id: str) -> TaskSpec[Any]:
    """Look up ``name-vN``, ``name`` for its latest version, or a source address.

    Imports only what it needs: the task ``name`` registered lazily, else the task
    sources' module for a prefixed address, and every plugin only when the name is not
    found otherwise.
    """
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
    _load_name(name)
    spec = _registered(name, version)
    if spec is None and not any(s.name == name for s in _REGISTRY.values()):
        _load_all()  # a plugin may register a task under another name than its own
        spec = _registered(name, version)
    if spec is not None:
        return spec
    current = sorted(s.id for s in _REGISTRY.values() if s.name == name)
    if current:
        raise UnknownTaskError(
            f"{name} has no version {version} here (registered: {', '.join(current)}); "
            "a change to a task's instances or rewards is a new version and the old one is "
            f"retired, so its logs replay only with the agentharness that made them. Use "
            f"'{name}' for the current version."
        )
    known = ", ".join(s.id for s in all_tasks())
    raise UnknownTaskError(f"unknown task '{task_id}'. Known tasks: {known}")


def group_versions(task_ids: Iterable[str]) -> dict[str, list[str]]:
    """Task name -> the versioned ids among ``task_ids`` (sorted), names sorted: what the
    loop and the exporters check before pooling runs (versions differ in instances and
    rewards)."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for task_id in task_ids:
        by_name[split_task_id(task_id)[0]].add(task_id)
    return {name: sorted(ids) for name, ids in sorted(by_name.items())}


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
        # None: each episode takes the task's budgets for its instance
        self.budgets = budgets

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
        budgets = self.budgets or self.spec.interaction.budgets_for(instance)
        return Episode(spec=self.spec, instance=instance, budgets=budgets)


def make(
    task_id: str, difficulty: str = "medium", budgets: Budgets | None = None, **knobs: Any
) -> Env:
    """An :class:`Env` for ``task_id`` (``name`` or ``name-vN``) at ``difficulty``.

    ``budgets`` applies to every episode; without it each takes the task's budgets for its
    instance (``Interaction.budgets_for``)."""
    return Env(get_task(task_id), difficulty=difficulty, budgets=budgets, **knobs)


def value_for_task(values: Mapping[str, V], task_id: str) -> V | None:
    """``task_id``'s entry in ``values``, keyed by versioned id (``thermal-v6``) or else by
    bare name (``thermal``, for any version); ``None`` when it has neither."""
    if task_id in values:
        return values[task_id]
    return values.get(split_task_id(task_id)[0])


def positive_turns(value: object) -> int:
    """``value`` as a turn budget: a whole number of at least 1 (numpy integers too)."""
    try:
        turns = operator.index(cast(SupportsIndex, value))
    except TypeError:
        turns = 0
    if isinstance(value, bool) or turns < 1:
        raise ValueError(f"a turn budget must be a whole number of at least 1, got {value!r}")
    return turns


def episode_for(
    instance: Instance, budgets: Budgets | None = None, *, max_turns: int | None = None
) -> Episode:
    """An episode on a stored instance (replay, held-out and synthesized sets).

    ``budgets`` defaults to the task's; ``max_turns`` replaces their turn budget (the budget
    a training row was exported with, so a trainer plays it as the evaluation does).
    """
    spec = get_task(instance.task)
    budgets = budgets or spec.interaction.budgets_for(instance)
    if max_turns is not None:
        turns = positive_turns(max_turns)
        budgets = budgets.override(max_turns=turns)
    return Episode(spec=spec, instance=instance, budgets=budgets)
