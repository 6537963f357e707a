"""The verl adapters driven through the call sequences verl makes (no GPU, no Ray).

With verl installed the classes subclass verl's own ``BaseTool`` / ``BaseInteraction`` and
the tools are built by verl's ``initialize_tools_from_config`` from the exported YAML;
without it the same methods are driven directly.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import warnings
from types import SimpleNamespace
from typing import Any

import pytest

from agentharness import get_task
from agentharness.agents.textformat import as_plain_text
from agentharness.core.instance import Instance
from agentharness.core.registry import episode_for
from agentharness.train import verl as V

TASK = "escape_room"


def expert_run(instance: Instance) -> tuple[list[tuple[str, dict[str, Any]]], list[str], float]:
    """The expert's tool calls, the bare tool results it saw and its reward (Episode API)."""
    spec = get_task(instance.task)
    episode = episode_for(instance)
    policy = spec.expert(instance)
    texts: list[str] = []
    while not episode.done:
        obs = episode.step(policy.next_turn(list(episode.messages)))
        texts.append("\n".join(m.text for m in obs.messages if m.text))
    calls = [(c.name, c.arguments) for c in episode.tool_calls]
    return calls, texts, episode.reward().total


def expert_turns(instance: Instance) -> list[str]:
    """The expert's assistant turns as text (``<tool_call>`` blocks), as a text model writes them."""
    spec = get_task(instance.task)
    episode = episode_for(instance)
    policy = spec.expert(instance)
    turns = []
    while not episode.done:
        message = policy.next_turn(list(episode.messages))
        turns.append(as_plain_text(message).text)
        episode.step(message)
    return turns


@pytest.fixture
def instance() -> Instance:
    return get_task(TASK).instance(3, "easy")


def make_tools(tmp_path: Any) -> dict[str, Any]:
    """Tool objects from the exported config: through verl's loader when verl is installed."""
    config = V.tool_config_yaml([TASK])
    try:
        from verl.tools.utils.tool_registry import initialize_tools_from_config  # verl <= 0.7
    except ImportError:
        try:
            from verl.tools.tool_registry import initialize_tools_from_config  # verl >= 0.8
        except ImportError:
            initialize_tools_from_config = None
    if initialize_tools_from_config is not None:
        path = tmp_path / "tools.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        tools = initialize_tools_from_config(str(path))
    else:
        tools = [
            V.AgentHarnessTool(entry["config"], entry["tool_schema"]) for entry in config["tools"]
        ]
    return {t.name: t for t in tools}


def test_config_helpers_name_our_classes() -> None:
    tools = V.tool_config_yaml([TASK])["tools"]
    names = {t["tool_schema"]["function"]["name"] for t in tools}
    assert names == {s["function"]["name"] for s in get_task(TASK).world.tool_schemas()}
    assert {t["class_name"] for t in tools} == {"agentharness.train.verl.AgentHarnessTool"}
    (interaction,) = V.interaction_config_yaml()["interaction"]
    assert interaction["class_name"] == "agentharness.train.verl.AgentHarnessInteraction"
    assert interaction["name"] == V.INTERACTION_NAME


def test_classes_subclass_verl_bases_when_installed() -> None:
    base_tool = V._verl_base("verl.tools.base_tool", "BaseTool")
    if base_tool is None:
        pytest.skip("verl is not installed: plain classes with verl's methods are used")
    assert issubclass(V.AgentHarnessTool, base_tool)
    base_interaction = V._verl_base("verl.interactions.base", "BaseInteraction")
    if base_interaction is not None:
        assert issubclass(V.AgentHarnessInteraction, base_interaction)


def test_agent_loop_call_sequence(instance: Instance, tmp_path: Any) -> None:
    """verl's ToolAgentLoop: create -> execute(agent_data=...) -> release around every call."""
    calls, texts, expected = expert_run(instance)
    assert expected >= 0.9
    tools = make_tools(tmp_path)
    create_kwargs = {"instance": instance.model_dump_json()}
    agent_data = SimpleNamespace(request_id="req-agent-loop", extra_fields={})

    async def play() -> list[str]:
        seen = []
        for name, args in calls:
            tool = tools[name]
            iid, _ = await tool.create(create_kwargs=create_kwargs)
            response, step_reward, metrics = await tool.execute(iid, args, agent_data=agent_data)
            await tool.release(iid)
            assert isinstance(step_reward, float) and isinstance(metrics, dict)
            seen.append(response.text)
        return seen

    seen = asyncio.run(play())
    assert seen == texts  # the same world answered the same calls
    # verl sends these as tool messages and the chat template adds <tool_response>: not us.
    assert not any("<tool_response>" in t for t in seen)
    assert agent_data.extra_fields[V.REWARD_FIELD] == pytest.approx(expected)
    scored = V.compute_score(
        f"agentharness/{instance.task}", "", instance.model_dump_json(), agent_data.extra_fields
    )
    assert scored["score"] == pytest.approx(expected) and scored["replayed"] is False


def test_sglang_call_sequence(instance: Instance, tmp_path: Any) -> None:
    """The SGLang rollout: create(request_id) per tool, execute per call, calc_reward + release."""
    calls, _, expected = expert_run(instance)
    tools = make_tools(tmp_path)
    rid = "req-sglang"

    async def play() -> list[float]:
        for tool in tools.values():
            await tool.create(rid, instance=instance.model_dump_json())
        for name, args in calls:
            await tools[name].execute(rid, json.dumps(args))  # arguments may arrive as JSON text

        async def calc_and_release(tool: Any) -> float:
            reward = await tool.calc_reward(rid)
            await tool.release(rid)
            return float(reward)

        return list(await asyncio.gather(*(calc_and_release(t) for t in tools.values())))

    rewards = asyncio.run(play())
    assert rewards == pytest.approx([expected] * len(tools))
    assert V.SESSIONS.get(rid) is None  # released


def test_a_tool_of_another_task_answers_with_an_error(tmp_path: Any) -> None:
    tool = make_tools(tmp_path)["look"]

    async def call() -> str:
        iid, _ = await tool.create(create_kwargs={"instance": None})
        response, _, _ = await tool.execute(
            iid, {}, agent_data=SimpleNamespace(request_id="x-none", extra_fields={})
        )
        await tool.release(iid)
        return str(response.text)

    assert "not available" in asyncio.run(call())


def test_a_rows_turn_budget_ends_the_tool_episode_there(instance: Instance, tmp_path: Any) -> None:
    """``create_kwargs["max_turns"]`` (``export rl --task-turns``): the episode ends at it."""
    calls, _, _ = expert_run(instance)
    assert len(calls) > 2
    tools = make_tools(tmp_path)
    create_kwargs = {"instance": instance.model_dump_json(), "max_turns": 2}
    agent_data = SimpleNamespace(request_id="req-two-turns", extra_fields={})

    async def play() -> list[dict[str, Any]]:
        seen = []
        for name, args in calls[:3]:
            iid, _ = await tools[name].create(create_kwargs=create_kwargs)
            response, _, metrics = await tools[name].execute(iid, args, agent_data=agent_data)
            await tools[name].release(iid)
            seen.append({"text": response.text, **metrics})
        return seen

    first, second, third = asyncio.run(play())
    assert not first["done"] and second["done"] and second["end_reason"] == "max_turns"
    assert "has ended (max_turns)" in third["text"]
    assert agent_data.extra_fields[V.SUCCESS_FIELD] is False


def test_a_bad_turn_budget_in_a_row_says_how_to_fix_it(instance: Instance, tmp_path: Any) -> None:
    tool = make_tools(tmp_path)["look"]

    async def call() -> None:
        iid, _ = await tool.create(
            create_kwargs={"instance": instance.model_dump_json(), "max_turns": 0}
        )
        await tool.execute(iid, {}, agent_data=SimpleNamespace(request_id="bad", extra_fields={}))

    with pytest.raises(V.TrainInputError, match=r"max_turns.*export rl"):
        asyncio.run(call())


def make_interaction(tmp_path: Any) -> Any:
    """The interaction from the exported config: through verl's loader when verl <= 0.7 is installed."""
    try:
        from verl.interactions.utils.interaction_registry import initialize_interactions_from_config
    except ImportError:
        (entry,) = V.interaction_config_yaml()["interaction"]
        return V.AgentHarnessInteraction({**entry["config"], "name": entry["name"]})
    path = tmp_path / "interaction.yaml"
    path.write_text(json.dumps(V.interaction_config_yaml()))
    return initialize_interactions_from_config(str(path))[V.INTERACTION_NAME]


def test_interaction_call_sequence_and_replayed_reward(instance: Instance, tmp_path: Any) -> None:
    """start_interaction -> generate_response per assistant turn -> calculate_score -> finalize."""
    interaction = make_interaction(tmp_path)
    assert interaction.name == V.INTERACTION_NAME
    kwargs = {"name": V.INTERACTION_NAME, "instance": instance.model_dump_json()}
    turns = expert_turns(instance)
    rid = "req-interaction"

    async def play() -> tuple[list[dict[str, str]], float]:
        key = await interaction.start_interaction(rid, **kwargs)
        assert key == rid
        messages: list[dict[str, str]] = [{"role": "user", "content": "prompt"}]
        done = False
        score = 0.0
        for text in turns:
            assert not done
            messages.append({"role": "assistant", "content": text})
            done, response, score, data = await interaction.generate_response(
                rid, messages, **kwargs
            )
            assert isinstance(data, dict)
            messages.append({"role": "user", "content": response})
        assert done
        final = await interaction.calculate_score(rid)
        assert final == pytest.approx(score)
        await interaction.finalize_interaction(rid)
        return messages, final

    messages, final = asyncio.run(play())
    _, _, expected = expert_run(instance)
    assert final == pytest.approx(expected)
    # verl's reward manager sees the decoded response; the reward re-executes it.
    solution = "\n".join(f"{m['role']}\n{m['content']}" for m in messages[1:])
    scored = V.compute_score(
        f"agentharness/{instance.task}", solution, instance.model_dump_json(), {}
    )
    assert scored["replayed"] is True and scored["score"] == pytest.approx(expected)


def test_interaction_and_replay_keep_the_rows_turn_budget(
    instance: Instance, tmp_path: Any
) -> None:
    """An expert that needs more turns than the row allows: not solved, live or replayed."""
    turns = expert_turns(instance)
    budget = len(turns) - 1
    kwargs = {"name": V.INTERACTION_NAME, "instance": instance.model_dump_json()}
    interaction = make_interaction(tmp_path)
    rid = "req-budget"

    async def play() -> tuple[bool, dict[str, Any]]:
        await interaction.start_interaction(rid, **kwargs, max_turns=budget)
        messages: list[dict[str, str]] = []
        done, data = False, {}
        for text in turns[:budget]:
            messages.append({"role": "assistant", "content": text})
            done, _, _, data = await interaction.generate_response(rid, messages, **kwargs)
        await interaction.finalize_interaction(rid)
        return done, data

    done, data = asyncio.run(play())
    assert done and data["end_reason"] == "max_turns" and data["success"] is False
    solution = "\n".join(turns)
    truth = instance.model_dump_json()
    assert V.compute_score("agentharness/x", solution, truth)["success"] is True
    capped = V.compute_score(
        "agentharness/x", solution, truth, {"interaction_kwargs": {**kwargs, "max_turns": budget}}
    )
    assert capped["success"] is False and capped["end_reason"] == "max_turns"


def test_compute_score_of_a_failed_rollout_and_bad_input(instance: Instance) -> None:
    scored = V.compute_score("agentharness/x", "I cannot do this.", instance.model_dump_json())
    assert scored["score"] == 0.0 and scored["end_reason"] == "no_answer"
    via_extra = V.compute_score(
        "agentharness/x",
        "nothing",
        None,
        {"interaction_kwargs": {"instance": instance.model_dump_json()}},
    )
    assert via_extra["score"] == 0.0
    with pytest.raises(ValueError, match="no instance"):
        V.compute_score("agentharness/x", "nothing", None, {})


def test_the_success_signal_scores_a_partly_credited_failure_zero() -> None:
    """``reward_signal="success"`` (verl's reward_kwargs) pays only a solved episode."""
    thermal = get_task("thermal").instance(3, "easy")
    turns = expert_turns(thermal)
    # The expert's final answer with every leading digit moved: near, but not a solve.
    wrong = re.sub(r"(\d)\.(\d)", lambda m: f"{(int(m[1]) + 1) % 10}.{m[2]}", turns[-1])
    solution = "\n".join([*turns[:-1], wrong])
    truth = thermal.model_dump_json()
    total = V.compute_score("agentharness/thermal", solution, truth)
    assert total["success"] is False and 0.0 < total["score"] == total["total"] < 1.0
    success = V.compute_score("agentharness/thermal", solution, truth, reward_signal="success")
    assert success["score"] == 0.0 and success["total"] == total["total"]
    solved = V.compute_score(
        "agentharness/thermal", "\n".join(turns), truth, reward_signal="success"
    )
    assert solved["score"] == 1.0 and solved["success"] is True
    recorded = {V.REWARD_FIELD: 0.4, V.SUCCESS_FIELD: False}
    live = V.compute_score("agentharness/thermal", "", truth, recorded, reward_signal="success")
    assert live["replayed"] is False and live["score"] == 0.0 and live["total"] == 0.4
    with pytest.raises(ValueError, match="choose one of total, success"):
        V.compute_score("agentharness/thermal", solution, truth, reward_signal="solved")


def test_session_store_is_bounded(instance: Instance) -> None:
    store = V._Sessions(limit=2)
    for k in ("a", "b", "c"):
        store.open(k, instance)
    assert len(store) == 2 and store.get("a") is None and store.get("c") is not None
    store.close("c")
    assert store.reward("c") == 0.0 and store.get("c") is None


class ScriptedServer:
    """verl's LLM server client, answering with scripted turns as tokens; keeps the prompts."""

    def __init__(self, tokenizer: Any, turns: list[str]) -> None:
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.calls = 0
        self.prompts: list[list[int]] = []

    async def generate(self, request_id: str, prompt_ids: list[int], **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        self.calls += 1
        self.prompts.append(list(prompt_ids))
        text = self.turns.pop(0) if self.turns else "Done."  # no tool call ends the loop
        ids = self.tokenizer(text, add_special_tokens=False).input_ids
        return TokenOutput(token_ids=[*ids, self.tokenizer.eos_token_id], stop_reason="completed")


def verl_config(reward_kwargs: dict[str, Any] | None = None) -> Any:
    from omegaconf import OmegaConf

    multi_turn = {
        "format": "hermes",
        "max_user_turns": 50,
        "max_assistant_turns": 50,
        "max_parallel_calls": 1,
        "max_tool_response_length": 100_000,
        "tool_response_truncate_side": "middle",
    }
    return OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 8192,
                    "response_length": 16384,
                    "full_determinism": False,
                    "multi_turn": multi_turn,
                }
            },
            "data": {},
            "reward": {
                "custom_reward_function": {
                    "path": V.__file__,
                    "name": "compute_score",
                    "reward_kwargs": reward_kwargs or {},
                }
            },
        }
    )


def smol_tokenizer() -> Any:
    from transformers import AutoTokenizer

    from agentharness.agents.local import bundled_model_path

    directory, gguf = bundled_model_path()
    return AutoTokenizer.from_pretrained(str(directory), gguf_file=gguf)


def verl_dataset(data: Any, tokenizer: Any) -> Any:
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create({"max_prompt_length": 8192, "filter_overlong_prompts": False})
    return RLHFDataset(str(data), tokenizer, config)


def play_row(data: Any, row: dict[str, Any], server: ScriptedServer, tokenizer: Any) -> Any:
    """Run verl's ToolAgentLoop on one dataset row with the tools of the exported YAML."""
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.tool_registry import load_all_tools
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = verl_config()
    tools = load_all_tools(
        tool_config_path=str(data.with_suffix(".tools.yaml")), function_tool_path=None
    )

    async def play() -> Any:  # verl builds agent loops inside its event loop
        loop = ToolAgentLoop(
            trainer_config=DictConfigWrap(config),
            server_manager=server,
            tokenizer=tokenizer,
            processor=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(config.data),
            tools=ToolListWrap(tools),
        )
        kwargs = {k: v for k, v in row.items() if k != "dummy_tensor"}
        return await loop.run({}, **kwargs)

    return asyncio.run(play())


def test_verl_agent_loop_plays_an_exported_row_end_to_end(
    instance: Instance, tmp_path: Any
) -> None:
    """verl's own pipeline on CPU, with a scripted policy instead of an inference server.

    ``bootcamp export rl --format verl`` output goes through verl's ``RLHFDataset``; verl's
    ``ToolAgentLoop`` (hermes tool parser, our tools loaded from the exported YAML) plays it,
    tokenizing with the bundled model's tokenizer; the reward function is loaded the way
    verl's reward loop loads a custom one and called as its naive reward manager calls it.
    """
    pytest.importorskip("verl.experimental.agent_loop.tool_agent_loop", reason="needs verl >= 0.8")
    pytest.importorskip("pyarrow", reason="needs the 'data' extra")
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from agentharness.export.rl import export_rl

    data = tmp_path / "rl.parquet"
    assert export_rl(None, data, instances=[instance], format="verl") == 1
    tokenizer = smol_tokenizer()
    row = verl_dataset(data, tokenizer)[0]
    turns = expert_turns(instance)
    _, texts, expected = expert_run(instance)
    server = ScriptedServer(tokenizer, turns)
    output = play_row(data, row, server, tokenizer)
    assert server.calls == len(turns) + 1 and not server.turns
    assert sum(output.response_mask) < len(output.response_mask)  # tool tokens are masked out
    assert output.extra_fields[V.REWARD_FIELD] == pytest.approx(expected)
    # Each tool result reaches the model once, inside whatever the chat template puts around
    # it; the adapter adds no <tool_response> of its own (Qwen's template would double it).
    last_prompt = tokenizer.decode(server.prompts[-1])
    assert texts[0] in last_prompt and f"<tool_response>\n{texts[0]}" not in last_prompt
    reward_fn = get_custom_reward_fn(verl_config())
    assert reward_fn is not None
    solution = tokenizer.decode(output.response_ids, skip_special_tokens=True)
    ground_truth = row["reward_model"]["ground_truth"]
    live = reward_fn(
        data_source=row["data_source"],
        solution_str=solution,
        ground_truth=ground_truth,
        extra_info={**row["extra_info"], **output.extra_fields},
    )
    assert live["score"] == pytest.approx(expected) and live["replayed"] is False
    replayed = reward_fn(
        data_source=row["data_source"],
        solution_str=solution,
        ground_truth=ground_truth,
        extra_info=dict(row["extra_info"]),
    )
    assert replayed["replayed"] is True and replayed["score"] == pytest.approx(expected)
    # verl passes the config's reward_kwargs to the function: the success signal.
    assert output.extra_fields[V.SUCCESS_FIELD] is True
    success_fn = get_custom_reward_fn(verl_config({"reward_signal": "success"}))
    assert success_fn is not None
    failed = success_fn(
        data_source=row["data_source"],
        solution_str="I give up.",
        ground_truth=ground_truth,
        extra_info=dict(row["extra_info"]),
    )
    assert failed["score"] == 0.0 and failed["replayed"] is True
    solved = success_fn(
        data_source=row["data_source"],
        solution_str=solution,
        ground_truth=ground_truth,
        extra_info={**row["extra_info"], **output.extra_fields},
    )
    assert solved["score"] == 1.0 and solved["replayed"] is False


def test_each_prompt_sees_only_its_own_tasks_tools(instance: Instance, tmp_path: Any) -> None:
    """A file mixing tasks: verl's ToolAgentLoop offers each row only its task's tools."""
    pytest.importorskip("verl.experimental.agent_loop.tool_agent_loop", reason="needs verl >= 0.8")
    pytest.importorskip("pyarrow", reason="needs the 'data' extra")
    from agentharness.export.rl import export_rl

    other = get_task("thermal").instance(0, "easy")
    data = tmp_path / "mixed.parquet"
    assert export_rl(None, data, instances=[instance, other], format="verl") == 2
    tokenizer = smol_tokenizer()
    dataset = verl_dataset(data, tokenizer)
    names = {
        t.instance.task: {
            s["function"]["name"] for s in get_task(t.instance.task).world.tool_schemas()
        }
        for t in (SimpleNamespace(instance=instance), SimpleNamespace(instance=other))
    }
    assert not names[instance.task] & names[other.task]
    for i, inst in enumerate((instance, other)):
        row = dataset[i]
        assert list(row["extra_info"]["tool_selection"]) == [
            s["function"]["name"] for s in get_task(inst.task).world.tool_schemas()
        ]
        foreign = sorted(set().union(*names.values()) - names[inst.task])
        call = f'<tool_call>\n{{"name": "{foreign[0]}", "arguments": {{}}}}\n</tool_call>'
        server = ScriptedServer(tokenizer, [call])
        play_row(data, row, server, tokenizer)
        # verl answered from the row's own tools: the foreign one is unknown, and the list of
        # available tools it gives is exactly the row's task's.
        reply = tokenizer.decode(server.prompts[1][len(server.prompts[0]) :])
        assert f"Unknown function '{foreign[0]}'" in reply, reply
        available = reply.split("Available tools: ", 1)[1].split("]", 1)[0]
        assert sorted(ast.literal_eval(available + "]")) == sorted(names[inst.task])


def test_vision_rows_reach_verls_image_pipeline(tmp_path: Any) -> None:
    """Image rows keep their images through RLHFDataset's message building."""
    pytest.importorskip("verl.utils.dataset.rl_dataset", reason="needs verl")
    from agentharness.export.rl import export_rl

    instance = get_task("tsp_vision").instance(0, "easy")
    data = tmp_path / "vision.parquet"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # qwen-vl-utils may be unusable here
        assert export_rl(None, data, instances=[instance], format="verl") == 1
    dataset = verl_dataset(data, smol_tokenizer())
    dataset.processor = object()  # a VLM's processor would be here; only its presence is checked
    example = dict(dataset.dataframe[0])
    messages = dataset._build_messages(example, key=dataset.prompt_key)
    parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
    images = [p["image"] for p in parts if p.get("type") == "image"]
    assert len(images) == len(example["images"]) >= 1
    assert images[0].size[0] > 100  # decoded PIL images, in <image> order


def test_a_vision_export_warns_when_verl_would_drop_its_rows(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow", reason="needs the 'data' extra")
    from agentharness.export import rl

    monkeypatch.setattr(rl, "vision_support_problem", lambda: "ModuleNotFoundError: torchvision")
    instance = get_task("tsp_vision").instance(0, "easy")
    with pytest.warns(UserWarning, match=r"qwen-vl-utils cannot be imported \(here: Module"):
        rl.export_rl(None, tmp_path / "v.parquet", instances=[instance], format="verl")
    monkeypatch.setattr(rl, "vision_support_problem", lambda: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rl.export_rl(None, tmp_path / "w.parquet", instances=[instance], format="verl")
