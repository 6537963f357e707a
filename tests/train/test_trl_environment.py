"""Our tasks as TRL environments: the schemas transformers reads, the episode behind the
methods, and one real GRPOTrainer step with ``environment_factory`` on the bundled model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentharness import get_task
from agentharness.core.registry import all_tasks
from agentharness.export.rl import export_rl
from agentharness.train.trl import TaskEnvironment, environment_factory


def test_every_tool_of_every_task_is_a_method_transformers_can_describe() -> None:
    from transformers.utils import get_json_schema

    classes = environment_factory("all")
    assert isinstance(classes, dict) and set(classes) == {s.id for s in all_tasks()}
    for task_id, cls in classes.items():
        env = cls()
        ours = {
            s["function"]["name"]: s["function"] for s in get_task(task_id).world.tool_schemas()
        }
        public = {n for n in dir(env) if not n.startswith("_") and callable(getattr(env, n))}
        assert public == set(ours) | {"reset", "get_reward"}, task_id
        for name, function in ours.items():
            schema = get_json_schema(getattr(env, name))["function"]
            assert schema["name"] == name
            assert set(schema["parameters"].get("properties", {})) == set(
                function["parameters"].get("properties", {})
            )
            assert set(schema["parameters"].get("required", [])) == set(
                function["parameters"].get("required", [])
            ), (task_id, name)


def test_the_methods_play_an_episode_and_the_reward_is_the_tasks() -> None:
    instance = get_task("escape_room").instance(3, "easy")
    env = environment_factory("escape_room")()  # type: ignore[operator]
    assert (
        env.reset(prompt=[], instance=instance.model_dump_json(), environment=instance.task) is None
    )
    expert = get_task("escape_room").expert(instance)
    from agentharness.core.registry import episode_for

    mirror = episode_for(instance)  # the expert reads the same answers from its own episode
    while not mirror.done:
        turn = expert.next_turn(list(mirror.messages))
        for call in turn.tool_calls or []:
            answer = getattr(env, call.function.name)(**json.loads(call.function.arguments))
            assert isinstance(answer, str) and "<tool_response>" not in answer
        mirror.step(turn)
    assert env.get_reward() == pytest.approx(mirror.reward().total) and env.get_reward() >= 0.9
    assert "ended" in env.look()  # no actions after the end
    env.reset(instance=instance.model_dump_json())  # a pooled instance starts over
    assert env.get_reward() == 0.0  # nothing done: finished as no_answer


def test_a_rows_max_turns_ends_the_episode_there() -> None:
    """``max_turns`` in the row (``export rl --task-turns``) is the episode's turn budget."""
    instance = get_task("escape_room").instance(3, "easy")
    env = environment_factory("escape_room")()  # type: ignore[operator]
    env.reset(instance=instance.model_dump_json(), max_turns=2)
    env.look()
    assert "max_turns" in env.look()  # the second call used up the budget
    assert "ended" in env.look() and env.get_reward() == 0.0
    env.reset(instance=instance.model_dump_json(), max_turns=None)  # None: the task's budget
    env.look(), env.look()
    assert "ended" not in env.look()


def test_bad_rows_and_reserved_names_are_clear_errors() -> None:
    env = environment_factory("escape_room")()  # type: ignore[operator]
    with pytest.raises(ValueError, match="needs 'instance'"):
        env.reset(prompt=[])
    instance = get_task("escape_room").instance(3, "easy").model_dump_json()
    with pytest.raises(ValueError, match=r"max_turns.*at least 1"):
        env.reset(instance=instance, max_turns=0)
    other = get_task("thermal").instance(0, "easy").model_dump_json()
    with pytest.raises(ValueError, match="reached the escape_room"):
        env.reset(instance=other)
    with pytest.raises(RuntimeError, match="before reset"):
        environment_factory("thermal")().get_reward()  # type: ignore[operator]


@pytest.mark.slow
def test_one_grpo_step_through_trls_environment_factory(
    smol_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bootcamp export rl --format trl` rows + environment_factory in TRL's own GRPOTrainer."""
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    # Two toy tasks with one-line prompts keep the CPU step short (the real tasks' prompts
    # and tool lists are thousands of tokens); the machinery is the same for every task.
    instances = [get_task("guess").instance(s, "easy") for s in range(2)] + [
        get_task("letters").instance(0, "easy")
    ]
    data = tmp_path / "rl.jsonl"
    assert export_rl(None, data, instances=instances, format="trl") == 3
    dataset = datasets.load_dataset("json", data_files=str(data), split="train")
    factory = environment_factory(["guess", "letters"])
    assert isinstance(factory, dict)

    tokenizer = AutoTokenizer.from_pretrained(str(smol_checkpoint))
    # SmolLM2's own template renders no tools; TRL's ChatML (Qwen2.5) one does, same tokens.
    import trl

    tokenizer.chat_template = (
        Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja"
    ).read_text()
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(str(smol_checkpoint))

    seen: list[tuple[str, float]] = []

    class Spy:
        """Record which environment scored what (TRL calls get_reward once per rollout)."""

        def __init__(self, cls: type[TaskEnvironment]) -> None:
            self.cls = cls

        def __call__(self) -> Any:
            env = self.cls()
            real = env.get_reward

            def get_reward() -> float:
                value = real()
                seen.append((env.spec.id, value))
                return value

            env.get_reward = get_reward  # type: ignore[method-assign]
            return env

    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=24,
        max_tool_calling_iterations=2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory={name: Spy(cls) for name, cls in factory.items()},
    )
    result = trainer.train()
    assert result.global_step == 1
    assert seen and {task for task, _ in seen} <= {get_task("guess").id, get_task("letters").id}
    assert all(0.0 <= value <= 1.0 for _, value in seen)
    logged = trainer.state.log_history[0]
    assert any(key.startswith("rewards/") for key in logged), logged
