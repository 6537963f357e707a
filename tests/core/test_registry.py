from __future__ import annotations

import json

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


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_a_seed_that_is_not_a_nonnegative_integer_is_a_clear_error(seed: object) -> None:
    with pytest.raises(TaskConfigError, match="seeds are integers >= 0"):
        make("guess").reset(seed=seed)  # type: ignore[arg-type]


def test_numpy_integer_seeds_name_the_same_instance() -> None:
    import numpy as np

    env = make("guess")
    assert env.generate(np.int64(4)) == env.generate(4)


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


def test_entry_point_plugins_register_tasks(tmp_path, monkeypatch) -> None:
    import dataclasses
    import sys

    from agentharness.core import registry

    plugin = tmp_path / "harness_plugin.py"
    plugin.write_text(
        "import dataclasses\nfrom toy_task import GUESS\n"
        "TASK = dataclasses.replace(GUESS, name='plugin_guess')\n"
    )
    dist = tmp_path / "harness_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[agentharness.tasks]\nplugin_guess = harness_plugin:TASK\nbroken = harness_plugin:MISSING\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "_plugins_named", False)
    with pytest.warns(UserWarning, match="could not load task entry point 'broken'"):
        ids = [s.id for s in registry.all_tasks()]
    assert "plugin_guess-v1" in ids and "guess-v1" in ids
    assert dataclasses.is_dataclass(get_task("plugin_guess"))
    del registry._REGISTRY["plugin_guess-v1"]
    for name in ("plugin_guess", "broken"):
        registry._LAZY.pop(name, None)
        registry._imported.discard(name)
    sys.modules.pop("harness_plugin", None)


def test_one_parser_of_task_ids() -> None:
    from agentharness.core.registry import split_task_id

    assert split_task_id("escape_room-v12") == ("escape_room", 12)
    assert split_task_id(" thermal ") == ("thermal", None)
    assert split_task_id("odd-vx") == ("odd-vx", None)


def test_a_retired_version_says_which_is_current() -> None:
    import pytest

    from agentharness.core.registry import UnknownTaskError, get_task

    with pytest.raises(
        UnknownTaskError, match=r"thermal has no version 1 here \(registered: thermal-v"
    ):
        get_task("thermal-v1")


def test_tasks_are_imported_lazily_one_at_a_time() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from agentharness.core import registry\n"
        "def loaded():\n"
        "    return sorted(m.split('.')[2] for m in sys.modules\n"
        "                  if m.startswith('agentharness.tasks.') and m.count('.') == 2)\n"
        "assert loaded() == [], loaded()\n"
        "names = registry.builtin_task_names()\n"
        "assert names[:2] == ('battery', 'finance') and len(names) == 10, names\n"
        "assert loaded() == [], loaded()\n"
        "assert registry.get_task('thermal').name == 'thermal'\n"
        "assert loaded() == ['thermal'], loaded()\n"
        "assert {s.name for s in registry.all_tasks()} >= set(names)\n"
        "assert loaded() == sorted(names), loaded()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_register_lazy_checks_its_arguments() -> None:
    from agentharness.core.registry import register_lazy

    with pytest.raises(ValueError, match="must match"):
        register_lazy("Bad Name", "pkg.mod:TASK")
    with pytest.raises(ValueError, match=r"package\.module:ATTRIBUTE"):
        register_lazy("fine", "pkg.mod")


def test_group_versions() -> None:
    from agentharness.core.registry import group_versions

    assert group_versions(["b-v2", "a-v1", "b-v1", "b-v2"]) == {
        "a": ["a-v1"],
        "b": ["b-v1", "b-v2"],
    }


def test_a_source_missing_its_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sources import their packages inside ``load``: a missing one is the install hint
    (what ``bootcamp show rg:...`` prints on one line), an unrelated ImportError stays."""
    import agentharness.sources.reasoning_gym as rg_source

    def missing(name: str) -> None:
        raise ModuleNotFoundError(f"No module named '{name}'", name="reasoning_gym")

    monkeypatch.setattr(rg_source, "load", missing)
    with pytest.raises(UnknownTaskError, match=r"pip install 'agentharness\[reasoning-gym\]'"):
        get_task("rg:no_such_dataset_here")

    def other(name: str) -> None:
        raise ModuleNotFoundError("No module named 'my_rewards'", name="my_rewards")

    monkeypatch.setattr(rg_source, "load", other)
    with pytest.raises(ModuleNotFoundError, match="my_rewards"):
        get_task("rg:no_such_dataset_here")


def test_episode_for_takes_a_turn_budget_over_the_tasks() -> None:
    import numpy as np

    from agentharness.core.registry import episode_for

    instance = get_task("thermal").instance(0, "easy")
    default = get_task("thermal").interaction.budgets
    assert episode_for(instance).budgets == default
    capped = episode_for(instance, max_turns=np.int64(2))  # parquet rows may hold numpy ints
    assert capped.budgets == default.override(max_turns=2)
    for bad in (0, -3, True, 2.5, "3"):
        with pytest.raises(ValueError, match="whole number of at least 1"):
            episode_for(instance, max_turns=bad)  # type: ignore[arg-type]


def test_episodes_take_the_budgets_the_task_gives_their_instance() -> None:
    """``Interaction.budgets_for``: harmony gives eight altered notes more turns than five."""
    from agentharness.core.registry import episode_for
    from agentharness.core.task import Budgets

    spec = get_task("harmony")
    env = make("harmony", "hard", n_errors=8, n_chords=16)
    episode = env.reset(seed=0)
    assert episode.budgets == spec.interaction.budgets_for(episode.instance)
    assert episode.budgets.max_turns > spec.interaction.budgets.max_turns
    assert episode_for(episode.instance).budgets == episode.budgets
    assert make("harmony", "hard").reset(seed=0).budgets == spec.interaction.budgets
    # Budgets given explicitly win over the task's, for every instance.
    mine = Budgets(max_turns=3)
    assert make("harmony", "hard", budgets=mine, n_errors=8, n_chords=16).reset(seed=0).budgets == (
        mine
    )
    assert episode_for(episode.instance, mine).budgets == mine


def test_instances_and_prompts_do_not_depend_on_the_process_hash_seed() -> None:
    """Same task version, config and seed, same instance and prompt in any process: a
    generator that iterated a set of strings would differ under another PYTHONHASHSEED."""
    import os
    import subprocess
    import sys

    script = (
        "import json\n"
        "from agentharness import all_tasks\n"
        "out = {}\n"
        "for spec in all_tasks():\n"
        "    inst = spec.instance(3, 'easy')\n"
        "    prompt = [m.model_dump(mode='json') for m in spec.generator.prompt(inst)]\n"
        "    out[spec.id] = [inst.model_dump(mode='json'), prompt]\n"
        "print(json.dumps(out, sort_keys=True))\n"
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for hash_seed in ("1", "2")
    ]
    assert outputs[0] == outputs[1]
    assert len(json.loads(outputs[0])) >= 10  # every bundled task
