"""The verl adapters driven through the call sequences verl makes (no GPU, no Ray).

With verl installed the classes subclass verl's own ``BaseTool`` / ``BaseInteraction`` and
the tools are built by verl's ``initialize_tools_from_config`` from the exported YAML;
without it the same methods are driven directly.
"""

from __future__ import annotations

import asyncio
import json
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
    """The expert's tool calls, the tool results it saw and its reward, via the Episode API."""
    spec = get_task(instance.task)
    episode = episode_for(instance)
    policy = spec.expert(instance)
    texts: list[str] = []
    while not episode.done:
        obs = episode.step(policy.next_turn(list(episode.messages)))
        texts.append("\n".join(as_plain_text(m).text for m in obs.messages))
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


def test_session_store_is_bounded(instance: Instance) -> None:
    store = V._Sessions(limit=2)
    for k in ("a", "b", "c"):
        store.open(k, instance)
    assert len(store) == 2 and store.get("a") is None and store.get("c") is not None
    store.close("c")
    assert store.reward("c") == 0.0 and store.get("c") is None


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
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.tool_registry import load_all_tools
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.workers.rollout.replica import TokenOutput

    from agentharness.agents.local import bundled_model_path
    from agentharness.export.rl import export_rl

    data = tmp_path / "rl.parquet"
    assert export_rl(None, data, instances=[instance], format="verl") == 1
    directory, gguf = bundled_model_path()
    tokenizer = AutoTokenizer.from_pretrained(str(directory), gguf_file=gguf)
    dataset_config = OmegaConf.create({"max_prompt_length": 8192, "filter_overlong_prompts": False})
    row = RLHFDataset(str(data), tokenizer, dataset_config)[0]
    turns = expert_turns(instance)
    _, _, expected = expert_run(instance)

    class ScriptedServer:
        """verl's LLM server client, answering with the expert's turns as tokens."""

        def __init__(self) -> None:
            self.turns = list(turns)
            self.calls = 0

        async def generate(self, request_id: str, prompt_ids: list[int], **_: Any) -> Any:
            self.calls += 1
            text = self.turns.pop(0) if self.turns else "Done."  # no tool call ends the loop
            ids = tokenizer(text, add_special_tokens=False).input_ids
            return TokenOutput(token_ids=[*ids, tokenizer.eos_token_id], stop_reason="completed")

    multi_turn = {
        "format": "hermes",
        "max_user_turns": 50,
        "max_assistant_turns": 50,
        "max_parallel_calls": 1,
        "max_tool_response_length": 100_000,
        "tool_response_truncate_side": "middle",
    }
    config = OmegaConf.create(
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
            "reward": {"custom_reward_function": {"path": V.__file__, "name": "compute_score"}},
        }
    )
    tools = load_all_tools(
        tool_config_path=str(data.with_suffix(".tools.yaml")), function_tool_path=None
    )
    server = ScriptedServer()

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

    output = asyncio.run(play())
    assert server.calls == len(turns) + 1 and not server.turns
    assert sum(output.response_mask) < len(output.response_mask)  # tool tokens are masked out
    assert output.extra_fields[V.REWARD_FIELD] == pytest.approx(expected)
    reward_fn = get_custom_reward_fn(config)
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
