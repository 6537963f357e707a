from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from agentharness.core.instance import Instance
from agentharness.core.registry import get_task
from agentharness.export.common import ExportError
from agentharness.export.rl import export_rl, items_from_records, trl_rows, verl_rows
from agentharness.export.verl import (
    INTERACTION_CLASS,
    INTERACTION_NAME,
    TOOL_CLASS,
    collect_tools,
    config_paths,
    verl_schema_problems,
    verl_tool_schema,
)
from agentharness.store.run import RunDir

STR = pa.string()
INSTANCE_AND_TURNS = [pa.field("instance", STR), pa.field("max_turns", pa.int64())]
KWARGS = pa.struct([pa.field("create_kwargs", pa.struct(INSTANCE_AND_TURNS))])


def test_verl_parquet_has_the_documented_columns_and_types(text_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.parquet"
    records = list(RunDir(text_run).episodes())
    n = export_rl([text_run], out, split="train")
    assert n == len({r.instance.instance_id for r in records})

    table = pq.read_table(out)
    schema = table.schema
    assert schema.names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert schema.field("data_source").type == STR
    assert schema.field("ability").type == STR
    assert schema.field("prompt").type == pa.list_(
        pa.struct([pa.field("role", STR), pa.field("content", STR)])
    )
    assert schema.field("reward_model").type == pa.struct(
        [pa.field("style", STR), pa.field("ground_truth", STR)]
    )
    extra = schema.field("extra_info").type
    assert [extra.field(i).name for i in range(extra.num_fields)] == [
        "split",
        "index",
        "task",
        "instance_id",
        "need_tools_kwargs",
        "tool_selection",
        "tools_kwargs",
        "interaction_kwargs",
    ]
    assert extra.field("tool_selection").type == pa.list_(STR)
    assert extra.field("index").type == pa.int64()
    assert extra.field("need_tools_kwargs").type == pa.bool_()
    assert extra.field("interaction_kwargs").type == pa.struct(
        [pa.field("name", STR), *INSTANCE_AND_TURNS]
    )
    tools_kwargs = extra.field("tools_kwargs").type
    tool_names = {tools_kwargs.field(i).name for i in range(tools_kwargs.num_fields)}
    every_tool = {t["function"]["name"] for r in records for t in r.tools}
    assert tool_names == every_tool
    assert all(tools_kwargs.field(name).type == KWARGS for name in tool_names)

    by_id = {r.instance.instance_id: r for r in records}
    for i, row in enumerate(table.to_pylist()):
        info = row["extra_info"]
        record = by_id[info["instance_id"]]
        assert row["data_source"] == f"agentharness/{record.task}"
        assert row["reward_model"]["style"] == "rule"
        # The reward can be recomputed: ground truth is the whole instance.
        assert Instance.model_validate_json(row["reward_model"]["ground_truth"]) == record.instance
        assert (info["split"], info["index"], info["task"]) == ("train", i, record.task)
        assert info["need_tools_kwargs"] is True
        assert info["interaction_kwargs"]["name"] == INTERACTION_NAME
        assert (
            Instance.model_validate_json(info["interaction_kwargs"]["instance"]) == record.instance
        )
        assert info["interaction_kwargs"]["max_turns"] is None  # no --task-turns: the task's
        own = {t["function"]["name"] for t in record.tools}
        for name, kwargs in info["tools_kwargs"].items():
            instance = kwargs["create_kwargs"]["instance"]
            assert kwargs["create_kwargs"]["max_turns"] is None
            assert (instance is not None) == (name in own)
            if instance is not None:
                assert Instance.model_validate_json(instance) == record.instance
        assert [m["role"] for m in row["prompt"]][:2] == ["system", "user"]


def test_task_turns_reach_each_rows_own_tools_interaction_and_trl_row(
    text_run: Path, tmp_path: Path
) -> None:
    records = list(RunDir(text_run).episodes())
    tasks = sorted({r.task for r in records})
    assert len(tasks) >= 2
    versioned, bare = tasks[0], tasks[1].split("-v")[0]  # a versioned id and a bare name
    turns = {versioned: 3, bare: 7}
    expected = {tasks[0]: 3, tasks[1]: 7}

    out = tmp_path / "train.parquet"
    export_rl([text_run], out, task_turns=turns)
    for row in pq.read_table(out).to_pylist():
        info = row["extra_info"]
        want = expected.get(info["task"])
        assert info["interaction_kwargs"]["max_turns"] == want
        for name, kwargs in info["tools_kwargs"].items():
            own = name in info["tool_selection"]
            assert kwargs["create_kwargs"]["max_turns"] == (want if own else None)

    trl = tmp_path / "train.jsonl"
    export_rl([text_run], trl, format="trl", task_turns=turns)
    rows = [json.loads(line) for line in trl.read_text().splitlines()]
    assert {(r["task"], r["max_turns"]) for r in rows} == {
        (r.task, expected.get(r.task)) for r in records
    }


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ({"thermal-v1": 3}, "name that version"),  # another version of a task the rows play
        ({"battery": 3}, "the prompts play"),  # a task no row plays
        ({"thermal": 0}, "at least 1"),
        ({"thermal": True}, "at least 1"),
    ],
)
def test_task_turns_that_would_be_ignored_or_are_not_turns_are_refused(
    text_run: Path, tmp_path: Path, turns: dict[str, int], message: str
) -> None:
    played = {r.task for r in RunDir(text_run).episodes()}
    assert "thermal-v1" not in played and any(t.startswith("thermal-v") for t in played)
    assert not any(t.startswith("battery") for t in played)
    out = tmp_path / "train.parquet"
    with pytest.raises(ExportError, match=message):
        export_rl([text_run], out, task_turns=turns)
    assert not out.exists()  # refused before anything is written


def test_verl_configs_follow_verls_yaml_layout(text_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.parquet"
    export_rl([text_run], out)
    tools_yaml, interaction_yaml = config_paths(out)
    assert (
        tools_yaml.name == "train.tools.yaml" and interaction_yaml.name == "train.interaction.yaml"
    )
    tools = yaml.safe_load(tools_yaml.read_text())["tools"]
    kwargs_keys = set(pq.read_table(out).to_pylist()[0]["extra_info"]["tools_kwargs"])
    assert {t["tool_schema"]["function"]["name"] for t in tools} == kwargs_keys
    for t in tools:
        assert t["class_name"] == TOOL_CLASS
        assert t["config"]["type"] == "native" and t["config"]["tasks"]
        assert t["tool_schema"]["type"] == "function"
        assert verl_schema_problems(t["tool_schema"]) == []
    assert interaction_yaml.read_text().startswith("# For verl <= 0.7 only")  # 0.8+ ignores it
    (interaction,) = yaml.safe_load(interaction_yaml.read_text())["interaction"]
    assert interaction == {"name": INTERACTION_NAME, "class_name": INTERACTION_CLASS, "config": {}}


def test_verl_tool_schema_normalises_what_verl_rejects() -> None:
    schema = {
        "type": "function",
        "function": {
            "name": "plan",
            "description": "d",
            "parameters": {
                "$defs": {"Voices": {"type": "object", "properties": {"s": {"type": "array"}}}},
                "type": "object",
                "properties": {
                    "voices": {"$ref": "#/$defs/Voices", "description": "four voices"},
                    "bolt": {"type": "integer", "enum": [6, 8], "description": "size"},
                    "note": {"anyOf": [{"type": "null"}, {"type": "string"}]},
                },
            },
        },
    }
    assert verl_schema_problems(schema)
    fixed = verl_tool_schema(schema)
    assert verl_schema_problems(fixed) == []
    params = fixed["function"]["parameters"]
    assert "$defs" not in params and params["required"] == []
    assert params["properties"]["voices"]["type"] == "object"
    assert params["properties"]["voices"]["properties"] == {"s": {"type": "array"}}
    assert params["properties"]["note"]["type"] == "string"
    assert "enum" not in params["properties"]["bolt"]
    assert params["properties"]["bolt"]["description"] == "size One of: 6, 8."
    assert schema["function"]["parameters"]["properties"]["bolt"]["enum"] == [
        6,
        8,
    ]  # input untouched


def test_every_builtin_tool_schema_becomes_valid_for_verl() -> None:
    for name in ("escape_room", "thermal", "finance", "harmony", "flange", "tsp_vision"):
        for schema in get_task(name).world.tool_schemas():
            assert verl_schema_problems(verl_tool_schema(schema)) == [], (name, schema)


def test_conflicting_tool_names_are_refused() -> None:
    a = {"type": "function", "function": {"name": "submit", "description": "a", "parameters": {}}}
    b = {"type": "function", "function": {"name": "submit", "description": "b", "parameters": {}}}
    assert collect_tools([("x-v1", [a]), ("y-v1", [a])])["submit"]["tasks"] == ["x-v1", "y-v1"]
    with pytest.raises(ExportError, match="separate files"):
        collect_tools([("x-v1", [a]), ("y-v1", [b])])


def test_verl_vision_prompts_carry_image_tokens_and_bytes(
    vision_run: Path, text_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "vision.parquet"
    export_rl([vision_run, text_run], out)
    table = pq.read_table(out)
    assert table.schema.field("images").type == pa.list_(
        pa.struct([pa.field("bytes", pa.binary()), pa.field("path", STR)])
    )
    saw_image = False
    for row in table.to_pylist():
        tokens = sum(m["content"].count("<image>") for m in row["prompt"])
        assert tokens == len(row["images"])
        assert all(im["bytes"].startswith(b"\x89PNG") for im in row["images"])
        saw_image = saw_image or tokens > 0
    assert saw_image


def test_rl_from_instances_file_and_trl_rows(tmp_path: Path) -> None:
    import datasets

    spec = get_task("thermal")
    instances = [spec.instance(s, "easy") for s in range(3)] + [spec.instance(0, "easy")]
    out = tmp_path / "prompts.jsonl"
    assert export_rl(None, out, instances=instances, format="trl") == 3  # duplicates collapse
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1, 2]
    for row, inst in zip(rows, instances, strict=False):
        assert Instance.model_validate_json(row["instance"]) == inst
        assert row["task"] == spec.id and row["instance_id"] == inst.instance_id
        assert row["prompt"] == [m.to_openai() for m in spec.generator.prompt(inst)]
    assert "images" not in rows[0]
    datasets.disable_progress_bars()
    ds = datasets.load_dataset(
        "json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert ds[0]["prompt"] == rows[0]["prompt"]

    verl_out = tmp_path / "prompts.parquet"
    assert export_rl(None, verl_out, instances=instances) == 3
    assert pq.read_table(verl_out).num_rows == 3


def test_trl_rows_of_vision_prompts_use_placeholders(vision_run: Path) -> None:
    items = items_from_records(list(RunDir(vision_run).episodes(resolve_images=True)))
    rows = trl_rows(items)
    for row in rows:
        parts = [p for m in row["prompt"] if isinstance(m["content"], list) for p in m["content"]]
        assert sum(p["type"] == "image" for p in parts) == len(row["images"]) > 0
        assert all(ref.startswith("data:image/png;base64,") for ref in row["images"])
    rows_verl, tools = verl_rows(items)
    assert len(rows_verl) == len(rows) and set(tools) == {"show_tour", "submit_tour", "tour_length"}


def test_rl_input_errors(text_run: Path, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="not both"):
        export_rl(
            [text_run], tmp_path / "x.parquet", instances=[get_task("thermal").instance(0, "easy")]
        )
    with pytest.raises(ExportError, match="not both and not neither"):
        export_rl(None, tmp_path / "x.parquet")
    with pytest.raises(ExportError, match="format"):
        export_rl([text_run], tmp_path / "x.parquet", format="csv")  # type: ignore[arg-type]
    bad = get_task("thermal").instance(0, "easy").model_copy(update={"task": "nosuchtask-v1"})
    with pytest.raises(ExportError, match="nosuchtask"):
        export_rl(None, tmp_path / "x.parquet", instances=[bad])
